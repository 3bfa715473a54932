/* `sbx trace stats`: a summary of a trace stream (trace_view.h), built as
 * JSON first so the text form and --json can never disagree. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "trace/trace_sys.h"
#include "trace/trace_view.h"
#include "util/err.h"
#include "util/json.h"

/* What a successful call tells about files, by syscall. */
enum { K_NONE, K_OPEN, K_TRUNCATE, K_CREATE, K_UNLINK, K_RENAME, K_MMAP };
typedef struct stat_kind {
	const char *name;
	int8_t rd, wr; /* descriptor argument read from / written to, -1 none */
	uint8_t kind;
	int8_t k; /* K_CREATE / K_UNLINK: which string argument; K_OPEN: the flags argument (-1: creat) */
	bool net; /* counted as a network call */
} stat_kind;

#define RD(n)                                                                                                \
	{                                                                                                    \
		n, 0, -1, K_NONE, 0, false                                                                   \
	}
#define WR(n)                                                                                                \
	{                                                                                                    \
		n, -1, 0, K_NONE, 0, false                                                                   \
	}
#define NET(n)                                                                                               \
	{                                                                                                    \
		n, -1, -1, K_NONE, 0, true                                                                   \
	}
static const stat_kind kinds[] = {
    RD("read"),
    RD("pread64"),
    RD("readv"),
    RD("preadv"),
    RD("preadv2"),
    WR("write"),
    WR("pwrite64"),
    WR("writev"),
    WR("pwritev"),
    WR("pwritev2"),
    WR("ftruncate"),
    WR("fallocate"),
    {"sendfile", 1, 0, K_NONE, 0, false},
    {"copy_file_range", 0, 2, K_NONE, 0, false},
    {"splice", 0, 2, K_NONE, 0, false},
    {"open", -1, -1, K_OPEN, 1, false},
    {"openat", -1, -1, K_OPEN, 2, false},
    {"creat", -1, -1, K_OPEN, -1, false},
    {"truncate", -1, -1, K_TRUNCATE, 0, false},
    {"mmap", -1, -1, K_MMAP, 0, false},
    {"mkdir", -1, -1, K_CREATE, 0, false},
    {"mkdirat", -1, -1, K_CREATE, 0, false},
    {"mknod", -1, -1, K_CREATE, 0, false},
    {"mknodat", -1, -1, K_CREATE, 0, false},
    {"link", -1, -1, K_CREATE, 1, false},
    {"linkat", -1, -1, K_CREATE, 1, false},
    {"symlink", -1, -1, K_CREATE, 1, false},
    {"symlinkat", -1, -1, K_CREATE, 1, false},
    {"unlink", -1, -1, K_UNLINK, 0, false},
    {"unlinkat", -1, -1, K_UNLINK, 0, false},
    {"rmdir", -1, -1, K_UNLINK, 0, false},
    {"rename", -1, -1, K_RENAME, 0, false},
    {"renameat", -1, -1, K_RENAME, 0, false},
    {"renameat2", -1, -1, K_RENAME, 0, false},
    NET("socket"),
    NET("socketpair"),
    NET("connect"),
    NET("accept"),
    NET("accept4"),
    NET("bind"),
    NET("listen"),
    NET("sendto"),
    NET("recvfrom"),
    NET("sendmsg"),
    NET("recvmsg"),
    NET("sendmmsg"),
    NET("recvmmsg"),
    NET("shutdown"),
    NET("getsockopt"),
    NET("setsockopt"),
    NET("getsockname"),
    NET("getpeername"),
};

static struct {
	pthread_once_t once;
	const stat_kind *of[TRACE_NR_MAX];
} tab = {.once = PTHREAD_ONCE_INIT};

static void tab_init(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(kinds); i++) {
		int nr = trace_sys_nr(kinds[i].name);
		if (nr >= 0)
			tab.of[nr] = &kinds[i];
	}
}

static const stat_kind *kind_of(int32_t nr)
{
	if (nr < 0 || nr >= TRACE_NR_MAX)
		return NULL;
	pthread_once(&tab.once, tab_init);
	return tab.of[nr];
}

typedef struct hist {
	uint64_t count, errors, time_ns;
} hist;

typedef struct stats {
	trace_state st;
	trace_smap hist; /* name -> hist* */
	trace_smap files[4];
	trace_smap net, domains, determ; /* name -> count (in the pointer) */
	json_t *renamed, *execs, *exits;
	uint64_t records, lost, sockets, max_ts;
	trace_sbuf path, path2;
} stats;

enum { F_READ, F_WRITTEN, F_CREATED, F_UNLINKED };
static const char *const file_keys[] = {"read", "written", "created", "unlinked"};

static void stats_free(stats *s)
{
	trace_state_free(&s->st);
	trace_smap_free(&s->hist, free);
	for (size_t i = 0; i < ARRAY_SIZE(s->files); i++)
		trace_smap_free(&s->files[i], NULL);
	trace_smap_free(&s->net, NULL);
	trace_smap_free(&s->domains, NULL);
	trace_smap_free(&s->determ, NULL);
	json_decref(s->renamed);
	json_decref(s->execs);
	json_decref(s->exits);
	trace_sb_free(&s->path);
	trace_sb_free(&s->path2);
}

static int count(trace_smap *m, const char *key, uint64_t n)
{
	void **slot = trace_smap_slot(m, key);
	if (!slot)
		return -ENOMEM;
	*slot = (void *)((uintptr_t)*slot + n);
	return 0;
}

static int add_file(stats *s, int set, const char *path)
{
	void **slot = trace_smap_slot(&s->files[set], path);
	if (!slot)
		return -ENOMEM;
	*slot = (void *)1;
	return 0;
}

/* A descriptor argument that is a known file (not a socket or pipe). */
static int add_fd(stats *s, int set, const trace_ev *ev, int arg)
{
	const trace_fd *f = arg >= 0 ? trace_state_fd(&s->st, ev->pid, (int32_t)ev->sys.args[arg]) : NULL;
	return f && f->kind == TRACE_FD_FILE ? add_file(s, set, f->path) : 0;
}

static int add_arg_path(stats *s, int set, const trace_ev *ev, int k)
{
	trace_sb_reset(&s->path);
	if (!trace_state_arg_path(&s->st, ev, k, &s->path))
		return 0;
	return s->path.oom ? -ENOMEM : add_file(s, set, trace_sb_str(&s->path));
}

/* Effects seen before the state applies the call (descriptors it closes
 * are still there). */
static int sys_before(stats *s, const trace_ev *ev, const stat_kind *k)
{
	int r = 0;
	if (k->rd >= 0)
		r = add_fd(s, F_READ, ev, k->rd);
	if (r >= 0 && k->wr >= 0)
		r = add_fd(s, F_WRITTEN, ev, k->wr);
	if (r < 0)
		return r;
	switch (k->kind) {
	case K_TRUNCATE:
		return add_arg_path(s, F_WRITTEN, ev, 0);
	case K_CREATE:
		return add_arg_path(s, F_CREATED, ev, k->k);
	case K_UNLINK:
		return add_arg_path(s, F_UNLINKED, ev, 0);
	case K_MMAP: {
		int32_t fd = (int32_t)ev->sys.args[4];
		uint64_t prot = ev->sys.args[2], fl = ev->sys.args[3];
		if (fd < 0 || (fl & MAP_ANONYMOUS))
			return 0;
		r = add_fd(s, F_READ, ev, 4);
		if (r >= 0 && (prot & PROT_WRITE) && (fl & MAP_TYPE) != MAP_PRIVATE)
			r = add_fd(s, F_WRITTEN, ev, 4);
		return r;
	}
	case K_RENAME: {
		trace_sb_reset(&s->path);
		trace_sb_reset(&s->path2);
		if (!trace_state_arg_path(&s->st, ev, 0, &s->path) ||
		    !trace_state_arg_path(&s->st, ev, 1, &s->path2))
			return 0;
		if (s->path.oom || s->path2.oom)
			return -ENOMEM;
		json_t *o = json_pack("{s:o?,s:o?}", "from", trace_json_str(trace_sb_str(&s->path)), "to",
				      trace_json_str(trace_sb_str(&s->path2)));
		return o && json_array_append_new(s->renamed, o) == 0 ? 0 : -ENOMEM;
	}
	}
	return 0;
}

/* Effects that need the state after the call (the descriptor it made). */
static int sys_after(stats *s, const trace_ev *ev, const stat_kind *k)
{
	if (k->kind == K_OPEN) {
		uint64_t fl = k->k < 0 ? (O_CREAT | O_WRONLY | O_TRUNC) : ev->sys.args[k->k];
		int acc = fl & O_ACCMODE;
		if (acc == O_WRONLY || acc == O_RDWR || (fl & (O_CREAT | O_TRUNC | O_APPEND))) {
			int r = 0;
			const trace_fd *f = trace_state_fd(&s->st, ev->pid, ev->sys.ret);
			if (f && f->kind == TRACE_FD_FILE)
				r = add_file(s, F_WRITTEN, f->path);
			if (r >= 0 && f && (fl & O_CREAT))
				r = add_file(s, F_CREATED, f->path);
			return r;
		}
		return 0;
	}
	if (streq(k->name, "socket") || streq(k->name, "accept") || streq(k->name, "accept4")) {
		const trace_fd *f = trace_state_fd(&s->st, ev->pid, ev->sys.ret);
		s->sockets++;
		/* the label is "socket:[AF_INET,SOCK_STREAM]": count by family */
		if (f && startswith(f->path, "socket:[")) {
			char fam[32];
			size_t n = strcspn(f->path + 8, ",]");
			snprintf(fam, sizeof(fam), "%.*s", (int)(n < sizeof(fam) ? n : sizeof(fam) - 1),
				 f->path + 8);
			return count(&s->domains, fam, 1);
		}
	}
	return 0;
}

static int on_syscall(stats *s, const trace_ev *ev)
{
	char buf[24];
	const char *name = trace_sys_label(ev->sys.nr, buf);
	void **slot = trace_smap_slot(&s->hist, name);
	if (!slot || (!*slot && !(*slot = calloc(1, sizeof(hist)))))
		return -ENOMEM;
	hist *h = *slot;
	bool has = ev->flags & TRS_HAS_RET, ok = has && !trace_ret_is_err(ev->sys.ret);
	h->count++;
	h->errors += has && !ok;
	if (has && ev->sys.enter_ns && ev->ts_ns >= ev->sys.enter_ns)
		h->time_ns += ev->ts_ns - ev->sys.enter_ns;
	const stat_kind *k = kind_of(ev->sys.nr);
	if (k && k->net && count(&s->net, k->name, 1) < 0)
		return -ENOMEM;
	if (k && ok && sys_before(s, ev, k) < 0)
		return -ENOMEM;
	if (trace_state_apply(&s->st, ev) < 0)
		return -ENOMEM;
	return k && ok ? sys_after(s, ev, k) : 0;
}

static int on_record(stats *s, const trace_ev *ev)
{
	s->records++;
	if (ev->ts_ns > s->max_ts)
		s->max_ts = ev->ts_ns;
	switch (ev->type) {
	case TR_SYSCALL:
		return on_syscall(s, ev);
	case TR_LOST:
		s->lost += ev->lost.count;
		break;
	case TR_EXEC: {
		json_t *o = json_pack("{s:I,s:o?,s:o?,s:b}", "pid", (json_int_t)ev->pid, "filename",
				      ev->exec.filename ? trace_json_str(ev->exec.filename) : json_null(),
				      "argv", trace_json_argv(ev), "argv_truncated", (int)(ev->flags & 1));
		if (!o || !json_object_get(o, "argv") || json_array_append_new(s->execs, o) < 0)
			return -ENOMEM;
		break;
	}
	case TR_EXIT:
		if (ev->flags & 1) {
			json_t *o = trace_json_exit(ev);
			if (!o || json_object_set_new(o, "pid", json_integer(ev->pid)) < 0 ||
			    json_object_del(o, "process") < 0 || json_array_append_new(s->exits, o) < 0)
				return -ENOMEM;
		}
		break;
	case TR_DETERM: {
		const char *kn = trace_determ_kind_name(ev->determ.kind);
		char buf[24];
		snprintf(buf, sizeof(buf), "kind %" PRIu32, ev->determ.kind);
		if (count(&s->determ, kn ? kn : buf, 1) < 0)
			return -ENOMEM;
		break;
	}
	}
	return trace_state_apply(&s->st, ev);
}

typedef struct hrow {
	const char *name;
	const hist *h;
} hrow;

static int cmp_hrow(const void *a, const void *b)
{
	const hrow *x = a, *y = b;
	if (x->h->count != y->h->count)
		return x->h->count > y->h->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

static json_t *json_hist(const trace_smap *m)
{
	_cleanup_free_ hrow *rows = calloc(m->n + 1, sizeof(hrow));
	if (!rows)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			rows[n++] = (hrow){m->keys[i], m->vals[i]};
	qsort(rows, n, sizeof(hrow), cmp_hrow);
	_cleanup_json_ json_t *a = json_array();
	for (size_t i = 0; a && i < n; i++) {
		const hist *h = rows[i].h;
		json_t *o = json_pack("{s:s,s:I,s:I,s:f,s:I}", "name", rows[i].name, "count",
				      (json_int_t)h->count, "errors", (json_int_t)h->errors, "time_us",
				      h->time_ns / 1000.0, "time_ns", (json_int_t)(h->time_ns & INT64_MAX));
		if (!o || json_array_append_new(a, o) < 0)
			return NULL;
	}
	return TAKE_PTR(a);
}

static json_t *json_set(const trace_smap *m)
{
	_cleanup_free_ const char **keys = trace_smap_sorted(m);
	_cleanup_json_ json_t *a = json_array();
	if (!keys || !a)
		return NULL;
	for (const char **k = keys; *k; k++)
		if (json_array_append_new(a, trace_json_str(*k)) < 0)
			return NULL;
	return TAKE_PTR(a);
}

static int cmp_key(const void *a, const void *b)
{
	return strcmp(((const hrow *)a)->name, ((const hrow *)b)->name);
}

/* {name: count} in name order (jansson keeps insertion order). */
static json_t *json_counts(const trace_smap *m)
{
	_cleanup_free_ hrow *rows = calloc(m->n + 1, sizeof(hrow));
	_cleanup_json_ json_t *o = json_object();
	if (!rows || !o)
		return NULL;
	size_t n = 0;
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			rows[n++] = (hrow){m->keys[i], m->vals[i]};
	qsort(rows, n, sizeof(hrow), cmp_key);
	for (size_t i = 0; i < n; i++)
		if (json_object_set_new(o, rows[i].name, json_integer((json_int_t)(uintptr_t)rows[i].h)) < 0)
			return NULL;
	return TAKE_PTR(o);
}

static json_t *stats_json(stats *s, const trace_reader *r)
{
	uint64_t start = s->st.hdr.start_ns, dur = s->max_ts > start ? s->max_ts - start : 0;
	_cleanup_json_ json_t *sys = json_hist(&s->hist), *net = json_counts(&s->net),
			      *dom = json_counts(&s->domains), *det = json_counts(&s->determ),
			      *files = json_object();
	if (!sys || !net || !dom || !det || !files)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(file_keys); i++)
		if (json_object_set_new(files, file_keys[i], json_set(&s->files[i])) < 0)
			return NULL;
	if (json_object_set(files, "renamed", s->renamed) < 0)
		return NULL;
	return json_pack("{s:I,s:I,s:I,s:I,s:I,s:O,s:O,s:O,s:{s:I,s:I,s:O},s:{s:O,s:I,s:O},s:O}", "records",
			 (json_int_t)s->records, "lost", (json_int_t)(s->lost & INT64_MAX), "unknown_records",
			 (json_int_t)r->n_unknown, "start_ns", (json_int_t)(start & INT64_MAX), "duration_ns",
			 (json_int_t)(dur & INT64_MAX), "syscalls", sys, "files", files, "execs", s->execs,
			 "processes", "count", (json_int_t)s->st.n_procs, "threads",
			 (json_int_t)s->st.n_threads, "exits", s->exits, "network", "syscalls", net,
			 "sockets", (json_int_t)s->sockets, "domains", dom, "determ", det);
}

int trace_stats(const void *buf, size_t len, json_t **ret, sbx_err **err)
{
	trace_reader r;
	int k = trace_read_init(&r, buf, len, err);
	if (k < 0)
		return k;
	_cleanup_(stats_free)
	    stats s = {.renamed = json_array(), .execs = json_array(), .exits = json_array()};
	if (!s.renamed || !s.execs || !s.exits)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if ((k = trace_state_init(&s.st, &r.hdr, err)) < 0)
		return k;
	trace_ev ev;
	while ((k = trace_read_next(&r, &ev, err)) > 0)
		if (on_record(&s, &ev) < 0)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if (k < 0)
		return k;
	json_t *j = stats_json(&s, &r);
	if (!j)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	*ret = j;
	return 0;
}

/* ---- text ------------------------------------------------------------------------------- */

static int64_t jint(const json_t *o, const char *k)
{
	return json_integer_value(json_object_get(o, k));
}

/* A string from the JSON (raw bytes of a path or argv) made safe for a terminal. */
static void put_esc(FILE *out, trace_sbuf *b, const char *s)
{
	trace_sb_reset(b);
	trace_sb_esc(b, s ? s : "?", strlen(s ? s : "?"));
	fputs(trace_sb_str(b), out);
}

static void put_counts(FILE *out, const json_t *o)
{
	const char *k;
	json_t *v;
	bool first = true;
	json_object_foreach((json_t *)o, k, v)
	{
		fprintf(out, "%s%s %" PRId64, first ? "" : ", ", k, (int64_t)json_integer_value(v));
		first = false;
	}
}

int trace_stats_print(const json_t *j, FILE *out, sbx_err **err)
{
	_cleanup_(trace_sb_free) trace_sbuf b = {0};
	int64_t dur = jint(j, "duration_ns");
	fprintf(out, "records %" PRId64 ", lost events %" PRId64 ", duration %" PRId64 ".%06" PRId64 " s\n",
		jint(j, "records"), jint(j, "lost"), dur / 1000000000, dur % 1000000000 / 1000);
	if (jint(j, "unknown_records"))
		fprintf(out, "records of unknown types skipped: %" PRId64 "\n", jint(j, "unknown_records"));

	const json_t *p = json_object_get(j, "processes");
	fprintf(out, "processes %" PRId64 ", threads %" PRId64 "\n", jint(p, "count"), jint(p, "threads"));
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(p, "exits"), i, v)
	{
		trace_sb_reset(&b);
		trace_sb_status(&b, (int32_t)jint(v, "status"));
		fprintf(out, "  [%" PRId64 "] %s\n", jint(v, "pid"), trace_sb_str(&b));
	}

	const json_t *sys = json_object_get(j, "syscalls");
	if (json_array_size(sys)) {
		fprintf(out, "\n%-24s %10s %8s %14s\n", "syscall", "count", "errors", "time_us");
		json_array_foreach(sys, i, v)
		    fprintf(out, "%-24s %10" PRId64 " %8" PRId64 " %14.3f\n",
			    json_string_value(json_object_get(v, "name")), jint(v, "count"),
			    jint(v, "errors"), json_real_value(json_object_get(v, "time_us")));
	}

	const json_t *ex = json_object_get(j, "execs");
	if (json_array_size(ex)) {
		fputs("\nexecs\n", out);
		json_array_foreach(ex, i, v)
		{
			fprintf(out, "  [%" PRId64 "] ", jint(v, "pid"));
			put_esc(out, &b, json_string_value(json_object_get(v, "filename")));
			fputs(" [", out);
			size_t a;
			json_t *s;
			json_array_foreach(json_object_get(v, "argv"), a, s)
			{
				fputs(a ? ", \"" : "\"", out);
				put_esc(out, &b, json_string_value(s));
				fputs("\"", out);
			}
			fputs(json_is_true(json_object_get(v, "argv_truncated")) ? "]...\n" : "]\n", out);
		}
	}

	const json_t *files = json_object_get(j, "files");
	for (size_t f = 0; f < ARRAY_SIZE(file_keys); f++) {
		const json_t *a = json_object_get(files, file_keys[f]);
		if (!json_array_size(a))
			continue;
		fprintf(out, "\nfiles %s (%zu)\n", file_keys[f], json_array_size(a));
		json_array_foreach(a, i, v)
		{
			fputs("  ", out);
			put_esc(out, &b, json_string_value(v));
			fputs("\n", out);
		}
	}
	const json_t *ren = json_object_get(files, "renamed");
	if (json_array_size(ren)) {
		fprintf(out, "\nfiles renamed (%zu)\n", json_array_size(ren));
		json_array_foreach(ren, i, v)
		{
			fputs("  ", out);
			put_esc(out, &b, json_string_value(json_object_get(v, "from")));
			fputs(" -> ", out);
			put_esc(out, &b, json_string_value(json_object_get(v, "to")));
			fputs("\n", out);
		}
	}

	const json_t *net = json_object_get(j, "network");
	if (jint(net, "sockets") || json_object_size(json_object_get(net, "syscalls"))) {
		fprintf(out, "\nnetwork: %" PRId64 " sockets", jint(net, "sockets"));
		if (json_object_size(json_object_get(net, "domains"))) {
			fputs(" (", out);
			put_counts(out, json_object_get(net, "domains"));
			fputs(")", out);
		}
		if (json_object_size(json_object_get(net, "syscalls"))) {
			fputs("; ", out);
			put_counts(out, json_object_get(net, "syscalls"));
		}
		fputs("\n", out);
	}
	const json_t *det = json_object_get(j, "determ");
	if (json_object_size(det)) {
		fputs("\ndeterminism engine: ", out);
		put_counts(out, det);
		fputs("\n", out);
	}
	if (b.oom)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if (fflush(out) != 0 || ferror(out))
		return err_errno(err, "write trace stats");
	return 0;
}
