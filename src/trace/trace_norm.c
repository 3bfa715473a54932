/* The normalized view of a trace for replay verification (trace_view.h).
 *
 * Two faithful runs of the same program differ in pids, timestamps,
 * addresses, byte counts of reads from pipes, the interleaving of threads
 * and processes, and how often they spin on futexes or poll. What they must
 * not differ in is which processes and threads exist, what each executes,
 * which files it touches and whether those calls succeed. So a run is
 * reduced to: processes numbered by first appearance, threads numbered by
 * first appearance within their process, and per thread the sequence of
 * (call, strings, ok-or-errno) items with timing-dependent calls dropped
 * and repeats collapsed. Item texts are interned so that equal items are
 * one pointer and comparing is cheap. */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "trace/trace_sys.h"
#include "trace/trace_view.h"
#include "util/err.h"
#include "util/json.h"

typedef struct nthread {
	const char **items; /* interned */
	size_t n, cap;
} nthread;

typedef struct nproc {
	int64_t parent; /* index, -1 when unknown (the first process, or its fork was not seen) */
	bool forked, exited;
	int32_t status;
	const char **execs; /* interned descriptions: "/bin/true" ["true"] */
	size_t n_execs, cap_execs;
	nthread *threads;
	size_t n_threads, cap_threads;
	trace_map tids; /* tid -> thread index + 1 */
} nproc;

struct trace_norm {
	nproc *procs;
	size_t n, cap;
	trace_map pids; /* tgid -> index + 1 of the process currently using it */
	trace_smap strings;
	uint64_t lost;
	trace_sbuf b;
};

void trace_norm_free(trace_norm *n)
{
	if (!n)
		return;
	for (size_t i = 0; i < n->n; i++) {
		nproc *p = &n->procs[i];
		for (size_t t = 0; t < p->n_threads; t++)
			free(p->threads[t].items);
		free(p->threads);
		free(p->execs);
		trace_map_free(&p->tids, NULL);
	}
	free(n->procs);
	trace_map_free(&n->pids, NULL);
	trace_smap_free(&n->strings, NULL);
	trace_sb_free(&n->b);
	free(n);
}

/* Grows *v (elements of size sz) to hold one more. */
static int grow(void *v, size_t *cap, size_t n, size_t sz)
{
	if (n < *cap)
		return 0;
	size_t c = *cap ? *cap * 2 : 8;
	void *p = realloc(*(void **)v, c * sz);
	if (!p)
		return -ENOMEM;
	memset((char *)p + *cap * sz, 0, (c - *cap) * sz);
	*(void **)v = p;
	*cap = c;
	return 0;
}

static int64_t proc_new(trace_norm *n, uint32_t pid, int64_t parent)
{
	if (grow(&n->procs, &n->cap, n->n, sizeof(nproc)) < 0)
		return -ENOMEM;
	void **slot = trace_map_slot(&n->pids, pid);
	if (!slot)
		return -ENOMEM;
	n->procs[n->n] = (nproc){.parent = parent};
	*slot = (void *)(uintptr_t)(n->n + 1);
	return (int64_t)n->n++;
}

/* The process a record of tgid pid belongs to, created on first sight. */
static int64_t proc_of(trace_norm *n, uint32_t pid)
{
	uintptr_t i = (uintptr_t)trace_map_get(&n->pids, pid);
	return i ? (int64_t)i - 1 : proc_new(n, pid, -1);
}

static int64_t thread_of(nproc *p, uint32_t tid)
{
	void **slot = trace_map_slot(&p->tids, tid);
	if (!slot)
		return -ENOMEM;
	if (*slot)
		return (int64_t)(uintptr_t)*slot - 1;
	if (grow(&p->threads, &p->cap_threads, p->n_threads, sizeof(nthread)) < 0)
		return -ENOMEM;
	p->threads[p->n_threads] = (nthread){0};
	*slot = (void *)(uintptr_t)(p->n_threads + 1);
	return (int64_t)p->n_threads++;
}

/* Appends the text in n->b to thread tid of process pi, unless it repeats
 * the thread's last item. */
static int add_item(trace_norm *n, int64_t pi, uint32_t tid)
{
	if (n->b.oom)
		return -ENOMEM;
	int64_t ti = thread_of(&n->procs[pi], tid);
	if (ti < 0)
		return (int)ti;
	nthread *t = &n->procs[pi].threads[ti];
	const char *s = trace_smap_intern(&n->strings, trace_sb_str(&n->b));
	if (!s)
		return -ENOMEM;
	if (t->n && t->items[t->n - 1] == s)
		return 0;
	if (grow(&t->items, &t->cap, t->n, sizeof(char *)) < 0)
		return -ENOMEM;
	t->items[t->n++] = s;
	return 0;
}

static void sb_quoted(trace_sbuf *b, const char *s)
{
	trace_sb_lit(b, "\"");
	trace_sb_esc(b, s, strlen(s));
	trace_sb_lit(b, "\"");
}

static int on_syscall(trace_norm *n, const trace_ev *ev)
{
	if (trace_sys_timing_dependent(ev->sys.nr))
		return 0;
	/* A call a signal interrupted (ERESTARTSYS 512, ERESTARTNOINTR 513,
	 * ERESTARTNOHAND 514, ERESTART_RESTARTBLOCK 516: the kernel restarts it
	 * or returns EINTR) shows where a signal happened to land: timing. The
	 * call's real outcome follows in its own record. */
	if ((ev->flags & TRS_HAS_RET) && ev->sys.ret <= -512 && ev->sys.ret >= -516)
		return 0;
	int64_t pi = proc_of(n, ev->pid);
	if (pi < 0)
		return (int)pi;
	trace_sbuf *b = &n->b;
	char buf[24];
	trace_sb_reset(b);
	trace_sb_addf(b, "%s", trace_sys_label(ev->sys.nr, buf));
	if (ev->sys.str[0] || ev->sys.str[1]) {
		trace_sb_lit(b, "(");
		for (int k = 0; k < 2; k++) {
			if (!ev->sys.str[k])
				continue;
			if (k && ev->sys.str[0])
				trace_sb_lit(b, ", ");
			if (ev->flags & (k ? TRS_STR1_FAULT : TRS_STR0_FAULT))
				trace_sb_lit(b, "<fault>");
			else
				sb_quoted(b, ev->sys.str[k]);
			if (ev->flags & (k ? TRS_STR1_TRUNC : TRS_STR0_TRUNC))
				trace_sb_lit(b, "...");
		}
		trace_sb_lit(b, ")");
	}
	if (!(ev->flags & TRS_HAS_RET))
		trace_sb_lit(b, " = ?");
	else if (trace_ret_is_err(ev->sys.ret)) {
		const char *e = trace_errno_name((int)-ev->sys.ret);
		if (e)
			trace_sb_addf(b, " = %s", e);
		else
			trace_sb_addf(b, " = errno %" PRId64, -ev->sys.ret);
	} else
		trace_sb_lit(b, " = ok");
	return add_item(n, pi, ev->tid);
}

static int on_fork(trace_norm *n, const trace_ev *ev)
{
	int64_t parent = proc_of(n, ev->fork.parent_pid);
	if (parent < 0)
		return (int)parent;
	trace_sbuf *b = &n->b;
	trace_sb_reset(b);
	if (ev->flags & 1) {
		int64_t pi = proc_of(n, ev->pid);
		if (pi < 0)
			return (int)pi;
		int64_t ti = thread_of(&n->procs[pi], ev->tid);
		if (ti < 0)
			return (int)ti;
		trace_sb_addf(b, "thread(%" PRId64 ")", ti);
		return add_item(n, parent, ev->fork.parent_tid);
	}
	uintptr_t old = (uintptr_t)trace_map_get(&n->pids, ev->pid);
	int64_t ci;
	if (old && (int64_t)old - 1 != parent && !n->procs[old - 1].forked && !n->procs[old - 1].exited) {
		/* its records came before its fork record: adopt it */
		ci = (int64_t)old - 1;
		n->procs[ci].parent = parent;
	} else if ((ci = proc_new(n, ev->pid, parent)) < 0)
		return (int)ci;
	n->procs[ci].forked = true;
	trace_sb_addf(b, "fork(process %" PRId64 ")", ci);
	return add_item(n, parent, ev->fork.parent_tid);
}

static int on_exec(trace_norm *n, const trace_ev *ev)
{
	int64_t pi = proc_of(n, ev->pid);
	if (pi < 0)
		return (int)pi;
	nproc *p = &n->procs[pi];
	trace_sbuf *b = &n->b;
	trace_sb_reset(b);
	sb_quoted(b, ev->exec.filename ? ev->exec.filename : "");
	trace_sb_lit(b, " ");
	trace_sb_argv(b, ev);
	if (b->oom)
		return -ENOMEM;
	const char *desc = trace_smap_intern(&n->strings, trace_sb_str(b));
	if (!desc || grow(&p->execs, &p->cap_execs, p->n_execs, sizeof(char *)) < 0)
		return -ENOMEM;
	p->execs[p->n_execs++] = desc;
	trace_sb_reset(b);
	trace_sb_lit(b, "exec(");
	sb_quoted(b, ev->exec.filename ? ev->exec.filename : "");
	trace_sb_lit(b, ", ");
	trace_sb_argv(b, ev);
	trace_sb_lit(b, ")");
	return add_item(n, pi, ev->tid);
}

static int on_record(trace_norm *n, const trace_ev *ev)
{
	switch (ev->type) {
	case TR_SYSCALL:
		return on_syscall(n, ev);
	case TR_FORK:
		return on_fork(n, ev);
	case TR_EXEC:
		return on_exec(n, ev);
	case TR_EXIT:
		if (ev->flags & 1) {
			int64_t pi = proc_of(n, ev->pid);
			if (pi < 0)
				return (int)pi;
			n->procs[pi].exited = true;
			n->procs[pi].status = ev->exit.status;
		}
		return 0;
	case TR_LOST:
		n->lost += ev->lost.count;
		return 0;
	case TR_DETERM: {
		int64_t pi = proc_of(n, ev->pid);
		if (pi < 0)
			return (int)pi;
		const char *kn = trace_determ_kind_name(ev->determ.kind);
		char buf[24];
		trace_sb_reset(&n->b);
		if (kn)
			trace_sb_addf(&n->b, "determ(%s, ", kn);
		else
			trace_sb_addf(&n->b, "determ(kind %" PRIu32 ", ", ev->determ.kind);
		trace_sb_addf(&n->b, "%s)", ev->determ.nr >= 0 ? trace_sys_label(ev->determ.nr, buf) : "-");
		return add_item(n, pi, ev->tid);
	}
	}
	return 0;
}

int trace_norm_build(const void *buf, size_t len, trace_norm **ret, sbx_err **err)
{
	trace_reader r;
	int k = trace_read_init(&r, buf, len, err);
	if (k < 0)
		return k;
	_cleanup_trace_norm_ trace_norm *n = calloc(1, sizeof(*n));
	if (!n)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if ((k = trace_check_arch(&r.hdr, err)) < 0) /* names come from the host's table */
		return k;
	trace_ev ev;
	while ((k = trace_read_next(&r, &ev, err)) > 0)
		if (on_record(n, &ev) < 0)
			return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if (k < 0)
		return k;
	trace_sb_free(&n->b);
	*ret = TAKE_PTR(n);
	return 0;
}

/* ---- printing and comparing ------------------------------------------------------------ */

static void sb_exit(trace_sbuf *b, const nproc *p)
{
	if (p->exited)
		trace_sb_status(b, p->status);
	else
		trace_sb_lit(b, "no exit seen");
}

int trace_norm_print(const trace_norm *n, FILE *out, sbx_err **err)
{
	_cleanup_(trace_sb_free) trace_sbuf b = {0};
	if (n->lost)
		fprintf(out, "!!! %" PRIu64 " events lost: this view is incomplete !!!\n", n->lost);
	for (size_t i = 0; i < n->n; i++) {
		const nproc *p = &n->procs[i];
		trace_sb_reset(&b);
		sb_exit(&b, p);
		if (p->parent >= 0)
			fprintf(out, "process %zu (parent %" PRId64 "): %s\n", i, p->parent,
				trace_sb_str(&b));
		else
			fprintf(out, "process %zu: %s\n", i, trace_sb_str(&b));
		for (size_t e = 0; e < p->n_execs; e++)
			fprintf(out, "  exec %s\n", p->execs[e]);
		for (size_t t = 0; t < p->n_threads; t++) {
			fprintf(out, "  thread %zu\n", t);
			for (size_t k = 0; k < p->threads[t].n; k++)
				fprintf(out, "    %s\n", p->threads[t].items[k]);
		}
	}
	if (b.oom)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	if (fflush(out) != 0 || ferror(out))
		return err_errno(err, "write normalized trace");
	return 0;
}

void trace_norm_diff_clear(trace_norm_diff *d)
{
	free(d->expected);
	free(d->actual);
	d->expected = d->actual = NULL;
}

const char *trace_norm_kind_name(trace_norm_kind k)
{
	static const char *const names[] = {"match", "processes", "parent", "exec",
					    "exit",  "threads",	  "item"};
	return (unsigned)k < ARRAY_SIZE(names) ? names[k] : "unknown";
}

static int differ(trace_norm_diff *d, trace_norm_kind kind, int64_t proc, int64_t thread, int64_t item,
		  const char *expected, const char *actual, sbx_err **err)
{
	d->kind = kind;
	d->process = proc;
	d->thread = thread;
	d->item = item;
	d->expected = strdup(expected);
	d->actual = strdup(actual);
	if (!d->expected || !d->actual) {
		trace_norm_diff_clear(d);
		return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
	}
	return 1;
}

static void sb_parent(trace_sbuf *b, int64_t parent)
{
	if (parent >= 0)
		trace_sb_addf(b, "parent %" PRId64, parent);
	else
		trace_sb_lit(b, "no parent seen");
}

/* The tree: processes' count, parents, execs, exits. */
static int compare_tree(const trace_norm *a, const trace_norm *b, trace_norm_diff *d, sbx_err **err)
{
	char x[64], y[64];
	if (a->n != b->n) {
		snprintf(x, sizeof(x), "%zu processes", a->n);
		snprintf(y, sizeof(y), "%zu processes", b->n);
		return differ(d, TRACE_NORM_PROCESSES, -1, -1, -1, x, y, err);
	}
	_cleanup_(trace_sb_free) trace_sbuf sa = {0}, sb = {0};
	for (size_t i = 0; i < a->n; i++) {
		const nproc *pa = &a->procs[i], *pb = &b->procs[i];
		if (pa->parent != pb->parent) {
			trace_sb_reset(&sa);
			trace_sb_reset(&sb);
			sb_parent(&sa, pa->parent);
			sb_parent(&sb, pb->parent);
			if (sa.oom || sb.oom)
				return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
			return differ(d, TRACE_NORM_PARENT, i, -1, -1, trace_sb_str(&sa), trace_sb_str(&sb),
				      err);
		}
		for (size_t e = 0; e < pa->n_execs || e < pb->n_execs; e++) {
			const char *ea = e < pa->n_execs ? pa->execs[e] : "(no exec)";
			const char *eb = e < pb->n_execs ? pb->execs[e] : "(no exec)";
			if (!streq(ea, eb))
				return differ(d, TRACE_NORM_EXEC, i, -1, e, ea, eb, err);
		}
		if (pa->exited != pb->exited || (pa->exited && pa->status != pb->status)) {
			trace_sb_reset(&sa);
			trace_sb_reset(&sb);
			sb_exit(&sa, pa);
			sb_exit(&sb, pb);
			if (sa.oom || sb.oom)
				return err_set(err, SBX_E_LIMIT_EXCEEDED, ENOMEM, "out of memory");
			return differ(d, TRACE_NORM_EXIT, i, -1, -1, trace_sb_str(&sa), trace_sb_str(&sb),
				      err);
		}
	}
	return 0;
}

int trace_norm_compare(const trace_norm *a, const trace_norm *b, trace_norm_diff *ret, sbx_err **err)
{
	*ret = (trace_norm_diff){.kind = TRACE_NORM_MATCH,
				 .process = -1,
				 .thread = -1,
				 .item = -1,
				 .lost_a = a->lost,
				 .lost_b = b->lost};
	int r = compare_tree(a, b, ret, err);
	if (r != 0)
		return r;
	/* Items are interned per view, so across views they compare as strings. */
	for (size_t i = 0; i < a->n; i++) {
		const nproc *pa = &a->procs[i], *pb = &b->procs[i];
		for (size_t t = 0; t < pa->n_threads && t < pb->n_threads; t++) {
			const nthread *ta = &pa->threads[t], *tb = &pb->threads[t];
			for (size_t k = 0; k < ta->n || k < tb->n; k++) {
				const char *x = k < ta->n ? ta->items[k] : "(end)";
				const char *y = k < tb->n ? tb->items[k] : "(end)";
				if (!streq(x, y))
					return differ(ret, TRACE_NORM_ITEM, i, t, k, x, y, err);
			}
		}
		if (pa->n_threads != pb->n_threads) {
			char x[64], y[64];
			snprintf(x, sizeof(x), "%zu threads", pa->n_threads);
			snprintf(y, sizeof(y), "%zu threads", pb->n_threads);
			return differ(ret, TRACE_NORM_THREADS, i, -1, -1, x, y, err);
		}
	}
	return 0;
}

/* ---- the tree up to the order of siblings --------------------------------------- */

typedef struct thash {
	uint64_t a, b;
} thash;

/* Two 64-bit FNV-1a style mixes: a hash of what a subtree is, not a secret. */
static void th_add(thash *h, const void *p, size_t n)
{
	const unsigned char *s = p;
	for (size_t i = 0; i < n; i++) {
		h->a = (h->a ^ s[i]) * 0x100000001b3ull;
		h->b = (h->b ^ s[i]) * 0x9e3779b97f4a7c15ull;
		h->b ^= h->b >> 31;
	}
}

static int th_cmp(const void *x, const void *y)
{
	const thash *a = x, *b = y;
	if (a->a != b->a)
		return a->a < b->a ? -1 : 1;
	return a->b < b->b ? -1 : a->b > b->b;
}

typedef struct tree_ctx {
	const trace_norm *n;
	thash *h;
	unsigned char *state; /* 0 not yet, 1 in progress, 2 done */
	size_t *off, *kid;    /* process i's children: kid[off[i] .. off[i + 1]) */
} tree_ctx;

/* The hash of process i's subtree: its execs, its exit, and its children's
 * subtrees as a sorted set. Negative when the tree is too deep or cyclic. */
static int subtree(tree_ctx *t, size_t i, int depth)
{
	if (t->state[i] == 2)
		return 0;
	if (t->state[i] == 1 || depth > 4096)
		return -ELOOP;
	t->state[i] = 1;
	const nproc *p = &t->n->procs[i];
	size_t nk = t->off[i + 1] - t->off[i];
	_cleanup_free_ thash *kids = nk ? calloc(nk, sizeof(*kids)) : NULL;
	if (nk && !kids)
		return -ENOMEM;
	for (size_t k = 0; k < nk; k++) {
		size_t c = t->kid[t->off[i] + k];
		int r = subtree(t, c, depth + 1);
		if (r < 0)
			return r;
		kids[k] = t->h[c];
	}
	if (nk)
		qsort(kids, nk, sizeof(*kids), th_cmp);
	thash h = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
	for (size_t e = 0; e < p->n_execs; e++)
		th_add(&h, p->execs[e], strlen(p->execs[e]) + 1);
	int32_t ex[2] = {p->exited, p->exited ? p->status : 0};
	th_add(&h, ex, sizeof(ex));
	th_add(&h, "[", 1);
	for (size_t k = 0; k < nk; k++)
		th_add(&h, &kids[k], sizeof(kids[k]));
	th_add(&h, "]", 1);
	t->h[i] = h;
	t->state[i] = 2;
	return 0;
}

/* The roots' subtrees (processes whose parent was not seen), sorted, as one hash. */
static int tree_hash(const trace_norm *n, thash *ret)
{
	_cleanup_free_ thash *h = calloc(n->n + 1, sizeof(*h));
	_cleanup_free_ unsigned char *state = calloc(n->n + 1, 1);
	_cleanup_free_ thash *roots = calloc(n->n + 1, sizeof(*roots));
	_cleanup_free_ size_t *off = calloc(n->n + 2, sizeof(*off)), *kid = calloc(n->n + 1, sizeof(*kid));
	if (!h || !state || !roots || !off || !kid)
		return -ENOMEM;
	for (size_t i = 0; i < n->n; i++)
		if (n->procs[i].parent >= 0 && (size_t)n->procs[i].parent < n->n)
			off[n->procs[i].parent + 2]++;
	for (size_t i = 2; i < n->n + 2; i++)
		off[i] += off[i - 1];
	for (size_t i = 0; i < n->n; i++) /* off[p + 1] counts p's children placed so far */
		if (n->procs[i].parent >= 0 && (size_t)n->procs[i].parent < n->n)
			kid[off[n->procs[i].parent + 1]++] = i;
	tree_ctx t = {n, h, state, off, kid};
	size_t nr = 0;
	for (size_t i = 0; i < n->n; i++)
		if (n->procs[i].parent < 0 || (size_t)n->procs[i].parent >= n->n) {
			int r = subtree(&t, i, 0);
			if (r < 0)
				return r;
			roots[nr++] = h[i];
		}
	for (size_t i = 0; i < n->n; i++)
		if (state[i] != 2)
			return -ELOOP; /* a process no root reaches: a cycle */
	if (nr)
		qsort(roots, nr, sizeof(*roots), th_cmp);
	thash all = {0xcbf29ce484222325ull, 0x84222325cbf29ce4ull};
	for (size_t i = 0; i < nr; i++)
		th_add(&all, &roots[i], sizeof(roots[i]));
	*ret = all;
	return 0;
}

bool trace_norm_same_tree(const trace_norm *a, const trace_norm *b)
{
	thash x, y;
	if (a->n != b->n || tree_hash(a, &x) < 0 || tree_hash(b, &y) < 0)
		return false;
	return x.a == y.a && x.b == y.b;
}

json_t *trace_norm_diff_json(const trace_norm_diff *d)
{
	json_t *idx[3];
	const int64_t v[3] = {d->process, d->thread, d->item};
	for (int i = 0; i < 3; i++)
		idx[i] = v[i] >= 0 ? json_integer(v[i]) : json_null();
	return json_pack("{s:b,s:s,s:o?,s:o?,s:o?,s:o?,s:o?,s:I,s:I}", "match", d->kind == TRACE_NORM_MATCH,
			 "kind", trace_norm_kind_name(d->kind), "process", idx[0], "thread", idx[1], "item",
			 idx[2], "expected", d->expected ? trace_json_str(d->expected) : json_null(),
			 "actual", d->actual ? trace_json_str(d->actual) : json_null(), "lost_a",
			 (json_int_t)(d->lost_a & INT64_MAX), "lost_b", (json_int_t)(d->lost_b & INT64_MAX));
}
