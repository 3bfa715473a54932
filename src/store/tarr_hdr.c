/* The tar reader's header fields (tarr.c): numeric fields (octal, GNU
 * base-256), the header checksum, pax extended records. */
#include <errno.h>
#include <limits.h>
#include <string.h>

#include "store/tarr_internal.h"

#define XATTR_VALUE_MAX 65536

/* Numeric header field: octal (spaces/NULs around) or GNU base-256. */
int tarr_parse_num(const uint8_t *f, size_t w, uint64_t *ret)
{
	uint64_t v = 0;
	if (f[0] & 0x80) {
		if (f[0] != 0x80)
			return -EINVAL; /* negative or > 2^(8*(w-1)) */
		for (size_t i = 1; i < w; i++) {
			if (v >> 55)
				return -ERANGE;
			v = v << 8 | f[i];
		}
		*ret = v;
		return 0;
	}
	size_t i = 0;
	while (i < w && f[i] == ' ')
		i++;
	for (; i < w && f[i] >= '0' && f[i] <= '7'; i++) {
		if (v >> 60)
			return -ERANGE;
		v = v * 8 + (uint64_t)(f[i] - '0');
	}
	for (; i < w; i++)
		if (f[i] != ' ' && f[i] != 0)
			return -EINVAL;
	*ret = v;
	return 0;
}

static bool parse_dec(const char *s, size_t n, uint64_t *ret)
{
	uint64_t v = 0;
	if (n == 0 || n > 19)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*ret = v;
	return true;
}

/* ---- pax ------------------------------------------------------------------- */

static int pax_apply(reader *r, const char *key, size_t klen, const char *val, size_t vlen, sbx_err **err)
{
	pending *p = &r->pd;
#define KEY(s) (klen == strlen(s) && memcmp(key, s, klen) == 0)
	if (KEY("path") || KEY("linkpath")) {
		if (memchr(val, 0, vlen))
			return BAD("tar: pax %.*s contains a NUL byte", (int)klen, key);
		char *v = strndup(val, vlen);
		if (!v)
			return err_errnum(err, ENOMEM, "tar");
		char **slot = KEY("path") ? &p->path : &p->linkpath;
		free(*slot);
		*slot = vlen ? v : (free(v), NULL);
	} else if (KEY("size") || KEY("uid") || KEY("gid")) {
		uint64_t v;
		if (!parse_dec(val, vlen, &v))
			return BAD("tar: pax %.*s is not a decimal number", (int)klen, key);
		if (KEY("size"))
			p->size = v, p->has_size = true;
		else if (KEY("uid"))
			p->uid = v, p->has_uid = true;
		else
			p->gid = v, p->has_gid = true;
	} else if (KEY("mtime")) {
		const char *dot = memchr(val, '.', vlen);
		size_t il = dot ? (size_t)(dot - val) : vlen;
		uint64_t sec, frac = 0;
		if (!parse_dec(val, il, &sec) || sec > INT64_MAX)
			return BAD("tar: pax mtime is not a non-negative decimal");
		long nsec = 0;
		if (dot) {
			size_t fl = vlen - il - 1;
			if (fl > 0 && !parse_dec(dot + 1, fl > 9 ? 9 : fl, &frac))
				return BAD("tar: pax mtime has a bad fraction");
			for (size_t i = fl; i < 9; i++)
				frac *= 10;
			for (size_t i = 9; i < fl; i++)
				if (dot[1 + i] < '0' || dot[1 + i] > '9')
					return BAD("tar: pax mtime has a bad fraction");
			nsec = (long)frac;
		}
		p->mtime_sec = (int64_t)sec;
		p->mtime_nsec = nsec;
		p->has_mtime = true;
	} else if (KEY(STORE_PAX_LITERAL) || KEY(STORE_PAX_WHITEOUT)) {
		if (vlen != 1 || val[0] != '1')
			return BAD("tar: pax %.*s must be 1", (int)klen, key);
		*(KEY(STORE_PAX_LITERAL) ? &p->literal : &p->wh_literal) = true;
	} else if (klen > 13 && memcmp(key, "SCHILY.xattr.", 13) == 0) {
		if (memchr(key, 0, klen))
			return BAD("tar: pax xattr name contains a NUL byte");
		if (vlen > XATTR_VALUE_MAX)
			return BAD("tar: xattr value over %d bytes", XATTR_VALUE_MAX);
		if (p->n_xa >= 1024)
			return BAD("tar: too many xattrs on one entry");
		xattr_kv *nx = realloc(p->xa, (p->n_xa + 1) * sizeof(*nx));
		if (!nx)
			return err_errnum(err, ENOMEM, "tar");
		p->xa = nx;
		xattr_kv kv = {strndup(key + 13, klen - 13), malloc(vlen + 1), vlen};
		if (!kv.name || !kv.value) {
			free(kv.name);
			free(kv.value);
			return err_errnum(err, ENOMEM, "tar");
		}
		memcpy(kv.value, val, vlen);
		p->xa[p->n_xa++] = kv;
	}
	/* other keys (atime, ctime, uname, gname, comment, vendor ones) are ignored */
#undef KEY
	return 0;
}

int tarr_pax_parse(reader *r, const char *b, size_t n, sbx_err **err)
{
	size_t off = 0;
	while (off < n) {
		size_t i = off, len = 0;
		while (i < n && b[i] >= '0' && b[i] <= '9' && i - off < 8)
			len = len * 10 + (size_t)(b[i++] - '0');
		if (i == off || i >= n || b[i] != ' ')
			return BAD("tar: malformed pax record length at offset %zu", off);
		if (len < (i - off) + 4 || len > n - off)
			return BAD("tar: pax record length %zu out of bounds at offset %zu", len, off);
		const char *rec = b + i + 1, *end = b + off + len - 1;
		if (*end != '\n')
			return BAD("tar: pax record at offset %zu does not end with a newline", off);
		const char *eq = memchr(rec, '=', (size_t)(end - rec));
		if (!eq || eq == rec)
			return BAD("tar: pax record at offset %zu has no key", off);
		int q = pax_apply(r, rec, (size_t)(eq - rec), eq + 1, (size_t)(end - eq - 1), err);
		if (q < 0)
			return q;
		off += len;
	}
	return 0;
}

int tarr_header_checksum_ok(const uint8_t *h)
{
	uint64_t want;
	if (tarr_parse_num(h + 148, 8, &want) < 0)
		return 0;
	unsigned long u = 0;
	long s = 0;
	for (size_t i = 0; i < STORE_TAR_BLOCK; i++) {
		uint8_t c = (i >= 148 && i < 156) ? ' ' : h[i];
		u += c;
		s += (signed char)c;
	}
	return want == u || (s >= 0 && want == (uint64_t)s);
}
