/* The validating trace reader and the two-stream merge (trace_read.h). */
#include "trace/trace_read.h"

#include <errno.h>
#include <string.h>

#include "util/err.h"

#define BAD(err, fmt, ...)                                                                                   \
	err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG, "malformed trace at offset " fmt, __VA_ARGS__)

size_t trace_rec_min_size(uint16_t type)
{
	switch (type) {
	case TR_SYSCALL:
		return sizeof(struct trace_syscall);
	case TR_FORK:
		return sizeof(struct trace_fork);
	case TR_EXEC:
		return sizeof(struct trace_exec);
	case TR_EXIT:
		return sizeof(struct trace_exit);
	case TR_LOST:
		return sizeof(struct trace_lost);
	case TR_DETERM:
		return sizeof(struct trace_determ);
	default:
		return 0;
	}
}

int trace_read_init(trace_reader *r, const void *buf, size_t len, sbx_err **err)
{
	*r = (trace_reader){.buf = buf, .len = len};
	if (!buf || len < sizeof(struct trace_file_header)) {
		r->failed = true;
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "malformed trace at offset 0: %zu bytes, shorter than the %zu-byte header",
			       len, sizeof(struct trace_file_header));
	}
	memcpy(&r->hdr, buf, sizeof(r->hdr));
	r->off = sizeof(r->hdr);
	if (memcmp(r->hdr.magic, TRACE_MAGIC, sizeof(r->hdr.magic)) != 0) {
		r->failed = true;
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "malformed trace at offset 0: bad magic (not an sbx trace)");
	}
	if (r->hdr.version != TRACE_VERSION) {
		r->failed = true;
		return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
			       "malformed trace at offset 8: version %u, this reader knows %u",
			       r->hdr.version, TRACE_VERSION);
	}
	return 0;
}

/* A string of n bytes at p (n counting the NUL; 0 = absent) must end in a
 * NUL; anything after an embedded NUL is simply not part of the string. */
static bool str_ok(const uint8_t *p, size_t n)
{
	return n == 0 || p[n - 1] == 0;
}

/* Type-specific checks and decoding of the fixed part; the common header is
 * already checked (len within the buffer, >= the type's minimum). Returns a
 * static reason on failure. */
static const char *decode(const uint8_t *p, trace_ev *ev)
{
	switch (ev->type) {
	case TR_SYSCALL: {
		struct trace_syscall s;
		memcpy(&s, p, sizeof(s));
		size_t room = ev->len - sizeof(s);
		if ((size_t)s.str0_len + s.str1_len > room)
			return "syscall string lengths overflow the record";
		const uint8_t *s0 = p + sizeof(s), *s1 = s0 + s.str0_len;
		if (!str_ok(s0, s.str0_len) || !str_ok(s1, s.str1_len))
			return "syscall string not NUL-terminated";
		ev->sys.nr = s.nr;
		ev->sys.ret = s.ret;
		memcpy(ev->sys.args, s.args, sizeof(s.args));
		ev->sys.enter_ns = s.enter_ns;
		ev->sys.str[0] = s.str0_len ? (const char *)s0 : NULL;
		ev->sys.str[1] = s.str1_len ? (const char *)s1 : NULL;
		return NULL;
	}
	case TR_FORK: {
		struct trace_fork f;
		memcpy(&f, p, sizeof(f));
		ev->fork.parent_pid = f.parent_pid;
		ev->fork.parent_tid = f.parent_tid;
		return NULL;
	}
	case TR_EXEC: {
		struct trace_exec x;
		memcpy(&x, p, sizeof(x));
		size_t room = ev->len - sizeof(x);
		if ((size_t)x.filename_len + x.argv_len > room)
			return "exec string lengths overflow the record";
		const uint8_t *fn = p + sizeof(x), *av = fn + x.filename_len;
		if (!str_ok(fn, x.filename_len))
			return "exec filename not NUL-terminated";
		if (!str_ok(av, x.argv_len))
			return "exec argv not NUL-terminated";
		ev->exec.filename = x.filename_len ? (const char *)fn : NULL;
		ev->exec.argv = (const char *)av;
		ev->exec.argv_len = x.argv_len;
		/* Count what is there rather than trusting x.argc: consumers walk
		 * argv by its NULs, so this is the number they will see. */
		uint32_t n = 0;
		for (size_t i = 0; i < x.argv_len; i++)
			n += av[i] == 0;
		ev->exec.argc = n;
		return NULL;
	}
	case TR_EXIT: {
		struct trace_exit x;
		memcpy(&x, p, sizeof(x));
		ev->exit.status = x.status;
		return NULL;
	}
	case TR_LOST: {
		struct trace_lost l;
		memcpy(&l, p, sizeof(l));
		ev->lost.count = l.count;
		return NULL;
	}
	case TR_DETERM: {
		struct trace_determ d;
		memcpy(&d, p, sizeof(d));
		if (d.value_len > ev->len - sizeof(d))
			return "determ value length overflows the record";
		ev->determ.kind = d.kind;
		ev->determ.nr = d.nr;
		ev->determ.value = p + sizeof(d);
		ev->determ.value_len = d.value_len;
		return NULL;
	}
	default:
		return NULL;
	}
}

int trace_read_next(trace_reader *r, trace_ev *ret, sbx_err **err)
{
	for (;;) {
		if (r->failed)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EBADMSG,
				       "malformed trace at offset %zu: reading past an earlier error",
				       r->off);
		if (r->off == r->len)
			return 0;
		size_t off = r->off, left = r->len - off;
		r->failed = true; /* until the record proves sound */
		if (left < sizeof(struct trace_rec))
			return BAD(err, "%zu: %zu trailing bytes, shorter than a record header", off, left);
		const uint8_t *p = r->buf + off;
		struct trace_rec h;
		memcpy(&h, p, sizeof(h));
		if (h.len < sizeof(h))
			return BAD(err, "%zu: record length %u is shorter than a record header", off, h.len);
		if (h.len % 8)
			return BAD(err, "%zu: record length %u is not a multiple of 8", off, h.len);
		if (h.len > left)
			return BAD(err, "%zu: record length %u runs past the end (%zu bytes left)", off,
				   h.len, left);
		size_t min = trace_rec_min_size(h.type);
		if (h.len < min)
			return BAD(err,
				   "%zu: record of type %u has length %u, shorter than its %zu-byte minimum",
				   off, h.type, h.len, min);
		r->failed = false;
		r->off += h.len;
		if (!min && !r->keep_unknown) {
			r->n_unknown++;
			continue; /* a type from a newer recorder: self-sized, so skippable */
		}
		trace_ev ev = {.off = off,
			       .seq = r->n,
			       .raw = p,
			       .type = h.type,
			       .len = h.len,
			       .pid = h.pid,
			       .tid = h.tid,
			       .flags = h.flags,
			       .ts_ns = h.ts_ns};
		const char *why = decode(p, &ev);
		if (why) {
			r->failed = true;
			r->off = off;
			return BAD(err, "%zu: %s", off, why);
		}
		if (!min)
			r->n_unknown++;
		r->n++;
		*ret = ev;
		return 1;
	}
}

int trace_check(const void *buf, size_t len, uint64_t *ret_records, sbx_err **err)
{
	trace_reader r;
	int k = trace_read_init(&r, buf, len, err);
	if (k < 0)
		return k;
	trace_ev ev;
	while ((k = trace_read_next(&r, &ev, err)) > 0)
		;
	if (k < 0)
		return k;
	if (ret_records)
		*ret_records = r.n;
	return 0;
}

int trace_merge(const void *a, size_t a_len, const void *b, size_t b_len, void **ret, size_t *ret_len,
		sbx_err **err)
{
	int k = trace_check(a, a_len, NULL, err);
	if (k < 0)
		return err_wrap(err, "first stream");
	k = trace_check(b, b_len, NULL, err);
	if (k < 0)
		return err_wrap(err, "second stream");
	trace_reader ra, rb;
	trace_read_init(&ra, a, a_len, NULL);
	trace_read_init(&rb, b, b_len, NULL);
	if (ra.hdr.arch != rb.hdr.arch)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "cannot merge traces of different architectures (0x%x and 0x%x)", ra.hdr.arch,
			       rb.hdr.arch);
	ra.keep_unknown = rb.keep_unknown = true;
	/* Validated streams are a header and whole records, so this is exact. */
	size_t hl = sizeof(struct trace_file_header), total = a_len + b_len - hl;
	_cleanup_free_ uint8_t *out = malloc(total);
	if (!out)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "merge traces: out of memory");
	struct trace_file_header h = ra.hdr;
	if (rb.hdr.start_ns < h.start_ns)
		h.start_ns = rb.hdr.start_ns;
	memcpy(out, &h, hl);
	size_t o = hl;
	trace_ev ea, eb;
	int ka = trace_read_next(&ra, &ea, NULL), kb = trace_read_next(&rb, &eb, NULL);
	while (ka > 0 || kb > 0) {
		bool take_a = ka > 0 && (kb <= 0 || ea.ts_ns <= eb.ts_ns);
		const trace_ev *e = take_a ? &ea : &eb;
		memcpy(out + o, e->raw, e->len);
		o += e->len;
		if (take_a)
			ka = trace_read_next(&ra, &ea, NULL);
		else
			kb = trace_read_next(&rb, &eb, NULL);
	}
	if (ka < 0 || kb < 0 || o != total) /* cannot happen after trace_check; stay safe anyway */
		return err_set(err, SBX_E_INTERNAL, EBADMSG, "merge traces: inconsistent input");
	*ret = TAKE_PTR(out);
	*ret_len = total;
	return 0;
}
