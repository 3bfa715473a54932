/* multipart/form-data, incremental and pure (see multipart.h). */
#include "server/multipart.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

enum {
	S_PREAMBLE, /* before the first boundary: skipped */
	S_AFTER,    /* a boundary just matched */
	S_PAD,	    /* transport padding after it */
	S_AFTER_CR, /* CR after it */
	S_DASH2,    /* the first '-' of the closing "--" */
	S_HEAD,	    /* a part's header lines */
	S_DATA,	    /* a part's data */
	S_EPILOGUE, /* after the closing boundary: skipped */
	S_ERROR,
};

static const char bchars[] = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'()+_,-./:=? ";

static int fail(multipart_parser *p, const char *why)
{
	p->state = S_ERROR;
	p->error = why;
	return MULTIPART_ERROR;
}

static const char *skip_ws(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* A parameter value at *s (a token or a quoted string) into out; *s moves
 * past it. -1 if it is malformed or too long. */
static int param_value(const char **s, char *out, size_t cap)
{
	const char *c = *s;
	size_t n = 0;
	if (*c == '"') {
		for (c++; *c != '"'; c++) {
			if (!*c)
				return -1;
			if (*c == '\\' && c[1])
				c++;
			if (n + 1 >= cap)
				return -1;
			out[n++] = *c;
		}
		c++;
	} else {
		for (; *c && *c != ';' && *c != ' ' && *c != '\t'; c++) {
			if (n + 1 >= cap)
				return -1;
			out[n++] = *c;
		}
	}
	out[n] = 0;
	*s = c;
	return 0;
}

static int disposition(multipart_parser *p, const char *v)
{
	const char *s = strchr(v, ';');
	while (s && *s == ';') {
		s = skip_ws(s + 1);
		const char *key = s;
		while (*s && *s != '=' && *s != ';' && *s != ' ' && *s != '\t')
			s++;
		size_t klen = (size_t)(s - key);
		s = skip_ws(s);
		if (*s != '=') {
			s = strchr(s, ';');
			continue;
		}
		s = skip_ws(s + 1);
		char val[MULTIPART_VALUE_MAX + 1];
		if (param_value(&s, val, sizeof(val)) < 0)
			return fail(p, "a Content-Disposition parameter is malformed or over 4096 bytes");
		if (klen == 4 && !strncasecmp(key, "name", 4)) {
			memcpy(p->part.name, val, strlen(val) + 1);
		} else if (klen == 8 && !strncasecmp(key, "filename", 8)) {
			memcpy(p->part.filename, val, strlen(val) + 1);
			p->part.has_filename = true;
		}
		s = skip_ws(s);
		if (*s && *s != ';')
			return fail(p, "a Content-Disposition parameter is followed by text");
	}
	return 0;
}

static int header_line(multipart_parser *p)
{
	p->line[p->line_len] = 0;
	char *colon = strchr(p->line, ':');
	if (!colon)
		return fail(p, "a part's header line has no colon");
	*colon = 0;
	const char *v = skip_ws(colon + 1);
	if (!strcasecmp(p->line, "Content-Disposition")) {
		if (p->line_cut)
			return fail(p, "a Content-Disposition header is over the bound");
		return disposition(p, v) < 0 ? MULTIPART_ERROR : 0;
	}
	if (!strcasecmp(p->line, "Content-Type"))
		snprintf(p->part.content_type, sizeof(p->part.content_type), "%s", v);
	return 0;
}

int multipart_boundary(const char *ct, char out[MULTIPART_BOUNDARY_MAX + 1])
{
	if (!ct)
		return -1;
	ct = skip_ws(ct);
	if (strncasecmp(ct, "multipart/form-data", 19) != 0 || (ct[19] && ct[19] != ';' && ct[19] != ' '))
		return -1;
	const char *s = ct + 19;
	while ((s = strchr(s, ';'))) {
		s = skip_ws(s + 1);
		if (strncasecmp(s, "boundary=", 9) != 0)
			continue;
		s += 9;
		char v[MULTIPART_BOUNDARY_MAX + 2];
		if (param_value(&s, v, sizeof(v)) < 0)
			return -1;
		size_t n = strlen(v);
		if (n < 1 || n > MULTIPART_BOUNDARY_MAX || v[n - 1] == ' ' || strspn(v, bchars) != n)
			return -1;
		memcpy(out, v, n + 1);
		return 0;
	}
	return -1;
}

void multipart_init(multipart_parser *p, const char *boundary)
{
	memset(p, 0, sizeof(*p));
	size_t n = strnlen(boundary, MULTIPART_BOUNDARY_MAX);
	memcpy(p->delim, "\r\n--", 4);
	memcpy(p->delim + 4, boundary, n);
	p->delim_len = n + 4;
	p->state = S_PREAMBLE;
	p->match = 2; /* the first boundary needs no CRLF before it */
}

static int emit(const multipart_cb *cb, void *ud, const char *d, size_t n)
{
	return n && cb->data ? cb->data(ud, d, n) : 0;
}

int multipart_feed(multipart_parser *p, const char *data, size_t len, const multipart_cb *cb, void *ud)
{
	size_t run = 0; /* in S_DATA: where the current run of data bytes starts */
	bool in_run = false;
	for (size_t i = 0; i < len; i++) {
		if (p->state == S_DATA && p->match == 0) { /* plain data up to the next CR: one run */
			const char *cr = memchr(data + i, '\r', len - i);
			size_t stop = cr ? (size_t)(cr - data) : len;
			if (stop > i) {
				if (!in_run) {
					run = i;
					in_run = true;
				}
				i = stop - 1;
				continue;
			}
		}
		unsigned char c = (unsigned char)data[i];
		switch (p->state) {
		case S_ERROR:
			return MULTIPART_ERROR;
		case S_EPILOGUE:
			return MULTIPART_DONE;
		case S_PREAMBLE:
		case S_DATA: {
			bool body = p->state == S_DATA;
			if (c == (unsigned char)p->delim[p->match]) {
				if (p->match == 0 && in_run && emit(cb, ud, data + run, i - run) < 0)
					return fail(p, "stopped");
				in_run = false;
				if (++p->match < p->delim_len)
					break;
				p->match = 0;
				if (body && cb->end && cb->end(ud) < 0)
					return fail(p, "stopped");
				p->state = S_AFTER;
				break;
			}
			if (p->match >
			    0) { /* a partial delimiter was data after all (it has one CR, first) */
				if (body && emit(cb, ud, p->delim, p->match) < 0)
					return fail(p, "stopped");
				p->match = c == '\r' ? 1 : 0;
				if (p->match)
					break;
			}
			if (body && !in_run) {
				run = i;
				in_run = true;
			}
			break;
		}
		case S_AFTER:
			if (c == '-')
				p->state = S_DASH2;
			else if (c == ' ' || c == '\t')
				p->state = S_PAD;
			else if (c == '\r')
				p->state = S_AFTER_CR;
			else
				return fail(p, "a boundary is followed by neither CRLF nor \"--\"");
			break;
		case S_PAD:
			if (c == '\r')
				p->state = S_AFTER_CR;
			else if (c != ' ' && c != '\t')
				return fail(p, "a boundary is followed by neither CRLF nor \"--\"");
			break;
		case S_DASH2:
			if (c != '-')
				return fail(p, "a boundary is followed by neither CRLF nor \"--\"");
			p->state = S_EPILOGUE;
			return MULTIPART_DONE;
		case S_AFTER_CR:
			if (c != '\n')
				return fail(p, "a boundary is followed by neither CRLF nor \"--\"");
			if (p->parts >= MULTIPART_PARTS_MAX)
				return fail(p, "more than 1000 parts");
			p->parts++;
			memset(&p->part, 0, sizeof(p->part));
			p->head_len = p->line_len = 0;
			p->line_cut = p->cr = false;
			p->state = S_HEAD;
			break;
		case S_HEAD:
			if (++p->head_len > MULTIPART_HEAD_MAX)
				return fail(p, "a part's headers are over 16 KiB");
			if (p->cr) {
				if (c != '\n')
					return fail(p, "a CR in a part's header is not followed by LF");
				p->cr = false;
				if (p->line_len == 0 && !p->line_cut) {
					if (cb->begin && cb->begin(ud, &p->part) < 0)
						return fail(p, "stopped");
					p->state = S_DATA;
					p->match = 0;
					break;
				}
				if (header_line(p) < 0)
					return MULTIPART_ERROR;
				p->line_len = 0;
				p->line_cut = false;
				break;
			}
			if (c == '\r') {
				p->cr = true;
				break;
			}
			if ((c < 0x20 && c != '\t') || c == 0x7f)
				return fail(p, "a control character in a part's header");
			if (p->line_len + 1 < sizeof(p->line))
				p->line[p->line_len++] = (char)c;
			else
				p->line_cut = true;
			break;
		}
	}
	if (p->state == S_DATA && in_run && emit(cb, ud, data + run, len - run) < 0)
		return fail(p, "stopped");
	return p->state == S_ERROR	? MULTIPART_ERROR
	       : p->state == S_EPILOGUE ? MULTIPART_DONE
					: MULTIPART_MORE;
}

int multipart_eof(multipart_parser *p)
{
	if (p->state == S_EPILOGUE)
		return MULTIPART_DONE;
	if (p->state != S_ERROR)
		fail(p, "truncated: the body ended before the closing boundary");
	return MULTIPART_ERROR;
}
