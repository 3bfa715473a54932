/* `sbx trace show`: filters, the strace-like text and the JSON form
 * (trace_view.h), over the decoder (trace_decode.c) and the model
 * (trace_model.c). */
#include "trace/trace_decode.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "trace/trace_sys.h"
#include "util/err.h"
#include "util/json.h"

/* ---- filters ------------------------------------------------------------------------------- */

/* "openat" or "syscall_N"; -1 (and false) if neither. */
static bool filter_nr(const char *name, int32_t *ret)
{
	int nr = trace_sys_nr(name);
	if (nr >= 0) {
		*ret = nr;
		return true;
	}
	if (strncmp(name, "syscall_", 8) != 0 || !name[8])
		return false;
	char *end;
	errno = 0;
	long v = strtol(name + 8, &end, 10);
	if (*end || errno || v < INT32_MIN || v > INT32_MAX)
		return false;
	*ret = (int32_t)v;
	return true;
}

int trace_filter_check(const trace_filter *f, sbx_err **err)
{
	for (const char *const *s = f && f->syscalls ? f->syscalls : NULL; s && *s; s++) {
		int32_t nr;
		if (!filter_nr(*s, &nr))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown syscall '%s'", *s);
	}
	return 0;
}

static int cmp_i32(const void *a, const void *b)
{
	int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
	return (x > y) - (x < y);
}

int trace_fmatch_init(trace_fmatch *m, const trace_filter *f, sbx_err **err)
{
	*m = (trace_fmatch){.f = f, .all_sys = !f || !f->syscalls};
	int r = trace_filter_check(f, err);
	if (r < 0 || m->all_sys)
		return r;
	size_t n = 0;
	while (f->syscalls[n])
		n++;
	m->nrs = calloc(n + 1, sizeof(int32_t));
	if (!m->nrs)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	for (size_t i = 0; i < n; i++)
		filter_nr(f->syscalls[i], &m->nrs[m->n_nrs++]);
	qsort(m->nrs, m->n_nrs, sizeof(int32_t), cmp_i32);
	return 0;
}

static bool pid_listed(const trace_filter *f, uint32_t id)
{
	for (size_t i = 0; i < f->n_pids; i++)
		if (f->pids[i] == id)
			return true;
	return false;
}

bool trace_fmatch_keep(const trace_fmatch *m, const trace_ev *ev)
{
	const trace_filter *f = m->f;
	if (f && f->pids && f->n_pids) {
		bool hit = pid_listed(f, ev->pid) || pid_listed(f, ev->tid);
		if (ev->type == TR_FORK)
			hit = hit || pid_listed(f, ev->fork.parent_pid) || pid_listed(f, ev->fork.parent_tid);
		if (!hit)
			return false;
	}
	if (m->all_sys || (ev->type != TR_SYSCALL && ev->type != TR_DETERM))
		return true;
	int32_t nr = ev->type == TR_SYSCALL ? ev->sys.nr : ev->determ.nr;
	return bsearch(&nr, m->nrs, m->n_nrs, sizeof(int32_t), cmp_i32) != NULL;
}

void trace_fmatch_free(trace_fmatch *m)
{
	free(m->nrs);
	m->nrs = NULL;
}

/* ---- show: text ------------------------------------------------------------------------------ */

static void sb_ids(trace_sbuf *b, uint32_t pid, uint32_t tid)
{
	if (pid == tid)
		trace_sb_addf(b, "[%" PRIu32 "] ", pid);
	else
		trace_sb_addf(b, "[%" PRIu32 ":%" PRIu32 "] ", pid, tid);
}

static const char *determ_label(const trace_ev *ev, char buf[24])
{
	const char *n = ev->determ.nr >= 0 ? trace_sys_name(ev->determ.nr) : NULL;
	if (n)
		return n;
	n = trace_determ_kind_name(ev->determ.kind);
	if (n)
		return n;
	snprintf(buf, 24, "kind %" PRIu32, ev->determ.kind);
	return buf;
}

/* Virtual inode numbers: a stat's device and inode, a listing's count. */
static void sb_inode(trace_sbuf *b, const trace_ev *ev)
{
	uint64_t v[2];
	if (ev->determ.nr >= 0 && trace_sys_name(ev->determ.nr) &&
	    strstr(trace_sys_name(ev->determ.nr), "getdents")) {
		trace_sb_addf(b, ": inode numbers of %" PRIu32 "%s entries", ev->determ.value_len / 8,
			      ev->flags & TRACE_DETERM_TRUNC ? "+" : "");
	} else if (ev->determ.value_len == sizeof(v)) {
		memcpy(v, ev->determ.value, sizeof(v));
		trace_sb_addf(b, ": dev %u:%u ino %" PRIu64, major(v[0]), minor(v[0]), v[1]);
	}
}

/* The line for a record (the state already updated by it; d decoded). */
static void show_line(trace_sbuf *b, const trace_state *st, const trace_dec *d, const trace_ev *ev)
{
	char t[32];
	trace_fmt_time(t, trace_ev_start(ev), st->hdr.start_ns);
	trace_sb_addf(b, "%10s ", t);
	switch (ev->type) {
	case TR_SYSCALL:
		sb_ids(b, ev->pid, ev->tid);
		trace_sb_addf(b, "%s(", d->name);
		for (int i = 0; i < d->nargs; i++) {
			if (i)
				trace_sb_lit(b, ", ");
			trace_sb_addf(b, "%s", trace_sb_str(&d->arg[i]));
		}
		trace_sb_addf(b, ") = %s", trace_sb_str(&d->ret));
		if (ev->flags & TRS_EMULATED)
			trace_sb_lit(b, " (emulated)");
		break;
	case TR_FORK:
		sb_ids(b, ev->fork.parent_pid, ev->fork.parent_tid);
		if (ev->flags & 1)
			trace_sb_addf(b, "+++ new thread %" PRIu32 " +++", ev->tid);
		else
			trace_sb_addf(b, "+++ fork child %" PRIu32 " +++", ev->pid);
		break;
	case TR_EXEC:
		sb_ids(b, ev->pid, ev->tid);
		trace_sb_lit(b, "+++ exec ");
		if (ev->exec.filename)
			trace_sb_esc(b, ev->exec.filename, strlen(ev->exec.filename));
		else
			trace_sb_lit(b, "?");
		trace_sb_lit(b, " ");
		trace_sb_argv(b, ev);
		trace_sb_lit(b, " +++");
		break;
	case TR_EXIT:
		sb_ids(b, ev->pid, ev->tid);
		trace_sb_addf(b, "+++ %s", ev->flags & 1 ? "" : "thread ");
		trace_sb_status(b, ev->exit.status);
		trace_sb_lit(b, " +++");
		break;
	case TR_LOST:
		trace_sb_addf(b, "!!! %" PRIu64 " events lost !!!", ev->lost.count);
		break;
	case TR_DETERM: {
		char buf[24];
		sb_ids(b, ev->pid, ev->tid);
		trace_sb_addf(b, "~~~ %s answered by determinism engine", determ_label(ev, buf));
		if (ev->determ.kind == TRACE_DETERM_PROCFS) { /* which file: the value starts with its path */
			trace_sb_lit(b, ": ");
			trace_sb_esc(b, (const char *)ev->determ.value,
				     strnlen((const char *)ev->determ.value, ev->determ.value_len));
		} else if (ev->determ.kind == TRACE_DETERM_INODE)
			sb_inode(b, ev);
		trace_sb_lit(b, " ~~~");
		break;
	}
	}
	trace_sb_lit(b, "\n");
}

/* The walk shared by the text and JSON forms. */
typedef int (*show_fn)(void *ud, const trace_state *st, const trace_dec *d, const trace_ev *ev,
		       sbx_err **err);

static int walk(const void *buf, size_t len, const trace_filter *f, show_fn fn, void *ud, sbx_err **err)
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
	trace_ev ev;
	while ((k = trace_read_next(&r, &ev, err)) > 0) {
		bool keep = trace_fmatch_keep(&m, &ev);
		if (keep && ev.type == TR_SYSCALL)
			trace_dec_args(&d, &st, &ev);
		if (trace_state_apply(&st, &ev) < 0)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
		if (!keep)
			continue;
		if (ev.type == TR_SYSCALL) {
			trace_dec_ret(&d, &st, &ev);
			if (trace_dec_oom(&d))
				return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
		}
		if ((k = fn(ud, &st, &d, &ev, err)) < 0)
			return k;
	}
	return k;
}

typedef struct show_out {
	trace_sbuf b;
	FILE *f;
} show_out;

static int show_text(void *ud, const trace_state *st, const trace_dec *d, const trace_ev *ev, sbx_err **err)
{
	show_out *o = ud;
	trace_sbuf *b = &o->b;
	FILE *out = o->f;
	trace_sb_reset(b);
	show_line(b, st, d, ev);
	if (b->oom)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if (fwrite(b->p, 1, b->len, out) != b->len)
		return err_errno(err, "write trace text");
	return 0;
}

int trace_show(const void *buf, size_t len, const trace_filter *f, FILE *out, sbx_err **err)
{
	show_out o = {.f = out};
	int k = walk(buf, len, f, show_text, &o, err);
	trace_sb_free(&o.b);
	if (fflush(out) != 0 && k >= 0)
		return err_errno(err, "write trace text");
	return k < 0 ? k : 0;
}

/* ---- show: JSON ------------------------------------------------------------------------------------ */

static int jset(json_t *o, const char *k, json_t *v)
{
	return v ? json_object_set_new(o, k, v) : -1;
}

static json_t *json_rel_ns(uint64_t ts, uint64_t start)
{
	if (ts >= start)
		return json_integer(ts - start > INT64_MAX ? INT64_MAX : (json_int_t)(ts - start));
	return json_integer(start - ts > INT64_MAX ? INT64_MIN : -(json_int_t)(start - ts));
}

json_t *trace_json_argv(const trace_ev *ev)
{
	json_t *a = json_array();
	const char *p = ev->exec.argv, *end = p + ev->exec.argv_len;
	while (a && p < end) {
		if (json_array_append_new(a, trace_json_str(p)) < 0) {
			json_decref(a);
			return NULL;
		}
		p += strlen(p) + 1;
	}
	return a;
}

json_t *trace_json_exit(const trace_ev *ev)
{
	json_t *o = json_object();
	int32_t s = ev->exit.status;
	int sig = s & 0x7f;
	if (!o || jset(o, "status", json_integer(s)) < 0 ||
	    jset(o, "process", json_boolean(ev->flags & 1)) < 0)
		goto fail;
	if (sig == 0) {
		if (jset(o, "exit_code", json_integer((s >> 8) & 0xff)) < 0)
			goto fail;
	} else if (sig != 0x7f) {
		trace_sbuf b = {0};
		trace_sb_signal(&b, sig);
		int r = b.oom ? -1 : jset(o, "signal", json_string(trace_sb_str(&b)));
		trace_sb_free(&b);
		if (r < 0 || jset(o, "core_dumped", json_boolean(s & 0x80)) < 0)
			goto fail;
	}
	return o;
fail:
	json_decref(o);
	return NULL;
}

/* Fills o with the type-specific fields of a record. */
static int json_fields(json_t *o, const trace_state *st, const trace_dec *d, const trace_ev *ev)
{
	switch (ev->type) {
	case TR_SYSCALL: {
		json_t *args = json_array(), *paths = json_array(), *fdp = json_object();
		if (jset(o, "syscall", json_string(d->name)) < 0 ||
		    jset(o, "nr", json_integer(ev->sys.nr)) < 0 || jset(o, "args", args) < 0 ||
		    jset(o, "paths", paths) < 0 || jset(o, "fd_paths", fdp) < 0)
			return -1;
		for (int i = 0; i < d->nargs; i++)
			if (json_array_append_new(args, json_string(trace_sb_str(&d->arg[i]))) < 0)
				return -1;
		for (int k = 0; k < 2; k++)
			if (ev->sys.str[k] && !(ev->flags & (k ? TRS_STR1_FAULT : TRS_STR0_FAULT)) &&
			    json_array_append_new(paths, trace_json_str(ev->sys.str[k])) < 0)
				return -1;
		for (int i = 0; i < d->nargs; i++) {
			char key[16];
			snprintf(key, sizeof(key), "%" PRId32, (int32_t)ev->sys.args[i]);
			if (d->fdknown[i] && jset(fdp, key, trace_json_str(trace_sb_str(&d->fdpath[i]))) < 0)
				return -1;
		}
		if (d->ret_fd >= 0) {
			const trace_fd *f = trace_state_fd(st, ev->pid, d->ret_fd);
			char key[24];
			snprintf(key, sizeof(key), "%" PRId64, d->ret_fd);
			if (f && jset(fdp, key, trace_json_str(f->path)) < 0)
				return -1;
		}
		bool has = ev->flags & TRS_HAS_RET;
		if (jset(o, "ret", has ? json_integer(ev->sys.ret) : json_null()) < 0)
			return -1;
		if (has && d->err) {
			const char *n = trace_errno_name((int)-ev->sys.ret);
			if (jset(o, "errno", n ? json_string(n) : json_integer(-ev->sys.ret)) < 0)
				return -1;
		}
		if (has && ev->sys.enter_ns && ev->ts_ns >= ev->sys.enter_ns &&
		    jset(o, "dur_ns",
			 json_integer((json_int_t)((ev->ts_ns - ev->sys.enter_ns) & INT64_MAX))) < 0)
			return -1;
		if ((ev->flags & TRS_EMULATED) && jset(o, "emulated", json_true()) < 0)
			return -1;
		return 0;
	}
	case TR_FORK:
		return jset(o, "parent_pid", json_integer(ev->fork.parent_pid)) < 0 ||
			       jset(o, "parent_tid", json_integer(ev->fork.parent_tid)) < 0 ||
			       jset(o, "thread", json_boolean(ev->flags & 1)) < 0
			   ? -1
			   : 0;
	case TR_EXEC:
		return jset(o, "filename",
			    ev->exec.filename ? trace_json_str(ev->exec.filename) : json_null()) < 0 ||
			       jset(o, "argv", trace_json_argv(ev)) < 0 ||
			       jset(o, "argv_truncated", json_boolean(ev->flags & 1)) < 0
			   ? -1
			   : 0;
	case TR_EXIT: {
		json_t *x = trace_json_exit(ev);
		int r = x ? json_object_update(o, x) : -1;
		json_decref(x);
		return r;
	}
	case TR_LOST:
		return jset(o, "count", json_integer((json_int_t)(ev->lost.count & INT64_MAX)));
	case TR_DETERM: {
		const char *kn = trace_determ_kind_name(ev->determ.kind), *sn = trace_sys_name(ev->determ.nr);
		/* The value the program was given, in hex (its layout per kind is in
		 * trace_format.h). */
		char hex[2 * TRACE_DETERM_MAX_VALUE + 1];
		size_t vl = ev->determ.value_len < TRACE_DETERM_MAX_VALUE ? ev->determ.value_len
									  : TRACE_DETERM_MAX_VALUE;
		for (size_t i = 0; i < vl; i++)
			snprintf(hex + 2 * i, 3, "%02x", ev->determ.value[i]);
		hex[2 * vl] = 0;
		return jset(o, "kind", kn ? json_string(kn) : json_integer(ev->determ.kind)) < 0 ||
			       jset(o, "syscall", sn ? json_string(sn) : json_null()) < 0 ||
			       jset(o, "nr", json_integer(ev->determ.nr)) < 0 ||
			       jset(o, "value", json_string(hex)) < 0
			   ? -1
			   : 0;
	}
	}
	return 0;
}

static const char *type_name(uint16_t t)
{
	static const char *const names[] = {NULL, "syscall", "fork", "exec", "exit", "lost", "determ"};
	return t < ARRAY_SIZE(names) ? names[t] : NULL;
}

static int show_json_one(void *ud, const trace_state *st, const trace_dec *d, const trace_ev *ev,
			 sbx_err **err)
{
	json_t *arr = ud;
	json_t *o = json_object();
	if (!o || json_array_append_new(arr, o) < 0 ||
	    jset(o, "seq", json_integer((json_int_t)ev->seq)) < 0 ||
	    jset(o, "t_ns", json_rel_ns(trace_ev_start(ev), st->hdr.start_ns)) < 0 ||
	    jset(o, "pid", json_integer(ev->pid)) < 0 || jset(o, "tid", json_integer(ev->tid)) < 0 ||
	    jset(o, "type", json_string(type_name(ev->type))) < 0 || json_fields(o, st, d, ev) < 0)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	return 0;
}

int trace_show_json(const void *buf, size_t len, const trace_filter *f, json_t **ret, sbx_err **err)
{
	_cleanup_json_ json_t *arr = json_array();
	if (!arr)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	int k = walk(buf, len, f, show_json_one, arr, err);
	if (k < 0)
		return k;
	*ret = TAKE_PTR(arr);
	return 0;
}
