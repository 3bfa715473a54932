/* Chrome trace-event export (trace_view.h). Streamed one event per line:
 * traces can hold millions of records, so no document is built in memory.
 * Event text is composed in a reused buffer with its own JSON string
 * escaping; strings from the trace are bytes, passed through when they are
 * UTF-8 and escaped as in the text form otherwise, so the output always
 * parses. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "trace/trace_view.h"
#include "util/err.h"

static bool utf8_valid(const unsigned char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		unsigned char c = s[i];
		size_t k = c < 0x80 ? 0 : (c >> 5) == 6 ? 1 : (c >> 4) == 14 ? 2 : (c >> 3) == 30 ? 3 : 9;
		if (k == 9 || k >= n - i)
			return false;
		uint32_t cp = k == 0 ? c : k == 1 ? c & 0x1f : k == 2 ? c & 0x0f : c & 0x07;
		for (size_t j = 1; j <= k; j++) {
			if ((s[i + j] & 0xc0) != 0x80)
				return false;
			cp = cp << 6 | (s[i + j] & 0x3f);
		}
		/* overlong forms, surrogates and values past U+10FFFF are not UTF-8 */
		if ((k == 1 && cp < 0x80) || (k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
		    (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return false;
		i += k + 1;
	}
	return true;
}

/* A JSON string literal of s. */
static void sb_jstr(trace_sbuf *b, const char *s)
{
	size_t n = strlen(s);
	trace_sbuf tmp = {0};
	if (!utf8_valid((const unsigned char *)s, n)) {
		trace_sb_esc(&tmp, s, n);
		if (tmp.oom) {
			b->oom = true;
			return;
		}
		s = trace_sb_str(&tmp);
		n = tmp.len;
	}
	trace_sb_lit(b, "\"");
	for (size_t i = 0; i < n; i++) {
		unsigned char c = s[i];
		if (c == '"' || c == '\\') {
			trace_sb_lit(b, "\\");
			trace_sb_add(b, (const char *)&c, 1);
		} else if (c < 0x20)
			trace_sb_addf(b, "\\u%04x", c);
		else
			trace_sb_add(b, (const char *)&c, 1);
	}
	trace_sb_lit(b, "\"");
	trace_sb_free(&tmp);
}

/* Microseconds with the nanoseconds as a fraction, as the format wants. */
static void sb_us(trace_sbuf *b, uint64_t ts, uint64_t start)
{
	uint64_t a = ts >= start ? ts - start : start - ts;
	trace_sb_addf(b, "%s%" PRIu64 ".%03" PRIu64, ts >= start ? "" : "-", a / 1000, a % 1000);
}

typedef struct chrome {
	FILE *out;
	trace_sbuf b;
	uint64_t start, n_events;
} chrome;

/* The common head of an event: {"ph":..,"pid":..,"tid":..,"ts":..,"name":.. */
static void head(chrome *c, const char *ph, uint32_t pid, uint32_t tid, uint64_t ts, const char *name)
{
	trace_sbuf *b = &c->b;
	trace_sb_reset(b);
	trace_sb_addf(b, "%s{\"ph\":\"%s\",\"pid\":%" PRIu32 ",\"tid\":%" PRIu32 ",\"ts\":",
		      c->n_events ? ",\n" : "", ph, pid, tid);
	sb_us(b, ts, c->start);
	trace_sb_lit(b, ",\"name\":");
	sb_jstr(b, name);
}

static int emit(chrome *c, sbx_err **err)
{
	trace_sbuf *b = &c->b;
	trace_sb_lit(b, "}");
	if (b->oom)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if (fwrite(b->p, 1, b->len, c->out) != b->len)
		return err_errno(err, "write Chrome trace");
	c->n_events++;
	return 0;
}

/* "M" events naming a process and/or thread. */
static int name_track(chrome *c, uint32_t pid, uint32_t tid, const char *name, bool process, sbx_err **err)
{
	if (!name)
		return 0;
	for (int i = process ? 0 : 1; i < 2; i++) {
		head(c, "M", pid, tid, 0, i == 0 ? "process_name" : "thread_name");
		trace_sb_lit(&c->b, ",\"args\":{\"name\":");
		sb_jstr(&c->b, name);
		trace_sb_lit(&c->b, "}");
		int r = emit(c, err);
		if (r < 0)
			return r;
	}
	return 0;
}

static int ev_syscall(chrome *c, const trace_dec *d, const trace_ev *ev, sbx_err **err)
{
	uint64_t t0 = trace_ev_start(ev);
	uint64_t dur = (ev->flags & TRS_HAS_RET) && ev->ts_ns > t0 ? ev->ts_ns - t0 : 0;
	head(c, "X", ev->pid, ev->tid, t0, d->name);
	trace_sbuf *b = &c->b;
	trace_sb_addf(b, ",\"dur\":%" PRIu64 ".%03" PRIu64 ",\"cat\":\"syscall\",\"args\":{\"args\":[",
		      dur / 1000, dur % 1000);
	for (int i = 0; i < d->nargs; i++) {
		if (i)
			trace_sb_lit(b, ",");
		sb_jstr(b, trace_sb_str(&d->arg[i]));
	}
	trace_sb_lit(b, "],\"ret\":");
	sb_jstr(b, trace_sb_str(&d->ret));
	if (ev->flags & TRS_EMULATED)
		trace_sb_lit(b, ",\"emulated\":true");
	trace_sb_lit(b, "}");
	return emit(c, err);
}

static int ev_other(chrome *c, const trace_state *st, const trace_ev *ev, sbx_err **err)
{
	trace_sbuf *b = &c->b;
	const trace_proc *p = trace_state_proc(st, ev->pid);
	int r;
	switch (ev->type) {
	case TR_FORK:
		head(c, "i", ev->fork.parent_pid, ev->fork.parent_tid, ev->ts_ns,
		     ev->flags & 1 ? "thread" : "fork");
		trace_sb_addf(b,
			      ",\"s\":\"t\",\"cat\":\"process\",\"args\":{\"child_pid\":%" PRIu32
			      ",\"child_tid\":%" PRIu32 "}",
			      ev->pid, ev->tid);
		if ((r = emit(c, err)) < 0)
			return r;
		/* the child is named after its parent until it execs */
		return name_track(c, ev->pid, ev->tid, p ? p->name : NULL, !(ev->flags & 1), err);
	case TR_EXEC: {
		head(c, "i", ev->pid, ev->tid, ev->ts_ns, "exec");
		trace_sb_lit(b, ",\"s\":\"t\",\"cat\":\"process\",\"args\":{\"filename\":");
		sb_jstr(b, ev->exec.filename ? ev->exec.filename : "");
		trace_sbuf argv = {0};
		trace_sb_argv(&argv, ev);
		trace_sb_lit(b, ",\"argv\":");
		sb_jstr(b, trace_sb_str(&argv));
		b->oom |= argv.oom;
		trace_sb_free(&argv);
		trace_sb_lit(b, "}");
		if ((r = emit(c, err)) < 0)
			return r;
		return name_track(c, ev->pid, ev->tid, p ? p->name : NULL, true, err);
	}
	case TR_EXIT: {
		trace_sbuf s = {0};
		trace_sb_status(&s, ev->exit.status);
		head(c, "i", ev->pid, ev->tid, ev->ts_ns, "exit");
		trace_sb_addf(
		    b, ",\"s\":\"%s\",\"cat\":\"process\",\"args\":{\"status\":", ev->flags & 1 ? "p" : "t");
		sb_jstr(b, trace_sb_str(&s));
		b->oom |= s.oom;
		trace_sb_free(&s);
		trace_sb_lit(b, "}");
		return emit(c, err);
	}
	case TR_LOST:
		head(c, "i", ev->pid, ev->tid, ev->ts_ns, "lost");
		trace_sb_addf(b, ",\"s\":\"g\",\"cat\":\"trace\",\"args\":{\"count\":%" PRIu64 "}",
			      ev->lost.count);
		return emit(c, err);
	case TR_DETERM: {
		char buf[24];
		const char *kn = trace_determ_kind_name(ev->determ.kind);
		head(c, "i", ev->pid, ev->tid, ev->ts_ns, "determ");
		trace_sb_lit(b, ",\"s\":\"t\",\"cat\":\"determ\",\"args\":{\"kind\":");
		if (!kn) {
			snprintf(buf, sizeof(buf), "kind %" PRIu32, ev->determ.kind);
			kn = buf;
		}
		sb_jstr(b, kn);
		trace_sb_lit(b, ",\"syscall\":");
		sb_jstr(b, ev->determ.nr >= 0 ? trace_sys_label(ev->determ.nr, buf) : "-");
		trace_sb_lit(b, "}");
		return emit(c, err);
	}
	}
	return 0;
}

int trace_chrome(const void *buf, size_t len, const trace_filter *f, FILE *out, sbx_err **err)
{
	trace_reader r;
	int k = trace_read_init(&r, buf, len, err);
	if (k < 0)
		return k;
	_cleanup_(trace_state_free) trace_state st = {0};
	if ((k = trace_state_init(&st, &r.hdr, err)) < 0)
		return k;
	_cleanup_(trace_fmatch_free) trace_fmatch m = {0};
	if ((k = trace_fmatch_init(&m, f, err)) < 0)
		return k;
	_cleanup_(trace_dec_free) trace_dec d = {0};
	chrome c = {.out = out, .start = r.hdr.start_ns};
	fputs("{\"traceEvents\":[\n", out);
	trace_ev ev;
	while ((k = trace_read_next(&r, &ev, err)) > 0) {
		bool keep = trace_fmatch_keep(&m, &ev);
		if (keep && ev.type == TR_SYSCALL)
			trace_dec_args(&d, &st, &ev);
		if (trace_state_apply(&st, &ev) < 0) {
			k = err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
			break;
		}
		if (!keep)
			continue;
		if (ev.type == TR_SYSCALL) {
			trace_dec_ret(&d, &st, &ev);
			k = trace_dec_oom(&d) ? err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory")
					      : ev_syscall(&c, &d, &ev, err);
		} else
			k = ev_other(&c, &st, &ev, err);
		if (k < 0)
			break;
	}
	trace_sb_free(&c.b);
	/* Closed even after an error: what was written stays loadable. */
	fprintf(
	    out,
	    "\n],\n\"displayTimeUnit\":\"ns\",\n\"otherData\":{\"source\":\"sbx trace\",\"recorder\":\"%s\","
	    "\"start_ns\":%" PRIu64 "}}\n",
	    r.hdr.recorder == TRACE_REC_BPF	 ? "bpf"
	    : r.hdr.recorder == TRACE_REC_PTRACE ? "ptrace"
						 : "unknown",
	    r.hdr.start_ns);
	if (fflush(out) != 0 && k >= 0)
		return err_errno(err, "write Chrome trace");
	return k < 0 ? k : 0;
}
