/* The read set of a traced run (readset.h): a walk of the event stream with
 * the descriptor model of trace_view.h and a working directory per process. */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "trace/readset.h"
#include "trace/trace_read.h"
#include "trace/trace_view.h"
#include "util/err.h"
#include "util/macro.h"

#define WRITTEN_FIRST ((void *)(uintptr_t)-1)

typedef struct walk {
	trace_state st;
	trace_map cwd;	  /* pid -> char* (malloc'd), absent: unknown */
	trace_smap seen;  /* "f/path" or "d/path" -> item index + 1, or WRITTEN_FIRST */
	trace_smap wseen; /* written paths, deduplicated */
	bool *dropped;	  /* per item: an ENOENT read of a file the run then made */
	size_t cap_dropped;
	readset rs;
	bool oom;
} walk;

/* path made absolute against cwd, "." and empty components dropped. False
 * when it cannot be made absolute, is truncated, or lies under /proc, /sys
 * or /dev (kernel objects, not content). */
static bool norm_path(const char *cwd, const char *path, bool trunc, trace_sbuf *out)
{
	trace_sb_reset(out);
	if (trunc || !path || !*path)
		return false;
	trace_sbuf raw = {0};
	if (path[0] != '/') {
		if (!cwd)
			return false;
		trace_sb_add(&raw, cwd, strlen(cwd));
		trace_sb_lit(&raw, "/");
	}
	trace_sb_add(&raw, path, strlen(path));
	const char *p = trace_sb_str(&raw);
	while (*p) {
		while (*p == '/')
			p++;
		size_t n = strcspn(p, "/");
		if (n == 0)
			break;
		if (!(n == 1 && p[0] == '.')) {
			trace_sb_lit(out, "/");
			trace_sb_add(out, p, n);
		}
		p += n;
	}
	if (out->len == 0)
		trace_sb_lit(out, "/");
	bool oom = raw.oom || out->oom;
	trace_sb_free(&raw);
	if (oom)
		return false;
	static const char *const skip[] = {"/proc", "/sys", "/dev"};
	const char *s = trace_sb_str(out);
	for (size_t i = 0; i < ARRAY_SIZE(skip); i++) {
		size_t l = strlen(skip[i]);
		if (strncmp(s, skip[i], l) == 0 && (s[l] == '/' || s[l] == 0))
			return false;
	}
	return true;
}

static const char *cwd_of(const walk *w, uint32_t pid)
{
	return trace_map_get(&w->cwd, pid);
}

/* The absolute form of a syscall's k-th string argument. */
static bool arg_path(walk *w, const trace_ev *ev, int k, trace_sbuf *out)
{
	trace_sbuf b = {0};
	bool ok = trace_state_arg_path(&w->st, ev, k, &b) && !b.oom;
	/* trace_state_arg_path appends "..." to a truncated string: refuse those */
	bool trunc = ev->flags & (k ? (TRS_STR1_TRUNC | TRS_STR1_FAULT) : (TRS_STR0_TRUNC | TRS_STR0_FAULT));
	ok = ok && norm_path(cwd_of(w, ev->pid), trace_sb_str(&b), trunc, out);
	w->oom |= b.oom;
	trace_sb_free(&b);
	return ok;
}

static void add_read(walk *w, const char *path, uint8_t kind, bool absent, const trace_ev *ev)
{
	char key[8] = {kind == READSET_DIR ? 'd' : 'f', 0};
	_cleanup_free_ char *k = malloc(strlen(path) + 2);
	if (!k) {
		w->oom = true;
		return;
	}
	strcpy(k, key);
	strcat(k, path);
	void **slot = trace_smap_slot(&w->seen, k);
	if (!slot) {
		w->oom = true;
		return;
	}
	if (*slot)
		return; /* read before, or written first */
	readset *rs = &w->rs;
	if (rs->n == rs->cap) {
		size_t cap = rs->cap ? rs->cap * 2 : 64;
		readset_item *nv = realloc(rs->v, cap * sizeof(*nv));
		bool *nd = realloc(w->dropped, cap * sizeof(*nd));
		if (nd)
			w->dropped = nd;
		if (nv)
			rs->v = nv;
		if (!nv || !nd) {
			w->oom = true;
			return;
		}
		rs->cap = cap;
	}
	char *p = strdup(path);
	if (!p) {
		w->oom = true;
		return;
	}
	w->dropped[rs->n] = false;
	rs->v[rs->n] =
	    (readset_item){.path = p, .kind = kind, .absent = absent, .index = ev->seq, .pid = ev->pid};
	*slot = (void *)(uintptr_t)(++rs->n);
}

/* first: the write creates or replaces the content (the run's own file). */
static void add_write(walk *w, const char *path, bool first)
{
	void **ws = trace_smap_slot(&w->wseen, path);
	if (!ws) {
		w->oom = true;
		return;
	}
	if (!*ws) {
		*ws = (void *)1;
		readset *rs = &w->rs;
		if (rs->n_written + 1 >= rs->cap_written) {
			size_t cap = rs->cap_written ? rs->cap_written * 2 : 16;
			char **nv = realloc(rs->written, cap * sizeof(*nv));
			if (!nv) {
				w->oom = true;
				return;
			}
			rs->written = nv;
			rs->cap_written = cap;
		}
		if (!(rs->written[rs->n_written] = strdup(path))) {
			w->oom = true;
			return;
		}
		rs->written[++rs->n_written] = NULL;
	}
	if (!first)
		return;
	_cleanup_free_ char *k = malloc(strlen(path) + 2);
	if (!k) {
		w->oom = true;
		return;
	}
	k[0] = 'f';
	strcpy(k + 1, path);
	void **slot = trace_smap_slot(&w->seen, k);
	if (!slot) {
		w->oom = true;
		return;
	}
	if (!*slot)
		*slot = WRITTEN_FIRST;
	else if (*slot != WRITTEN_FIRST) {
		size_t i = (uintptr_t)*slot - 1;
		if (w->rs.v[i].absent)
			w->dropped[i] = true; /* it did not exist; the run made it */
	}
}

static void set_cwd(walk *w, uint32_t pid, const char *path)
{
	void **slot = trace_map_slot(&w->cwd, pid);
	char *c = path ? strdup(path) : NULL;
	if (!slot || (path && !c)) {
		free(c);
		w->oom = true;
		return;
	}
	free(*slot);
	*slot = c;
}

static bool is_nr(int32_t nr, long want)
{
	return want >= 0 && nr == want;
}
#ifndef SYS_open
#define SYS_open (-1)
#define SYS_creat (-1)
#define SYS_rename (-1)
#define SYS_getdents (-1)
#endif

static void on_open(walk *w, const trace_ev *ev, uint64_t flags, bool flags_known)
{
	trace_sbuf p = {0};
	if (!arg_path(w, ev, 0, &p)) {
		trace_sb_free(&p);
		return;
	}
	bool has = ev->flags & TRS_HAS_RET;
	int64_t ret = ev->sys.ret;
	int acc = (int)(flags & O_ACCMODE);
	bool opath = flags_known && (flags & O_PATH) == O_PATH;
	bool writes = flags_known && (acc == O_WRONLY || acc == O_RDWR || (flags & (O_TRUNC | O_CREAT)));
	bool replaces =
	    flags_known && (acc == O_WRONLY || (flags & O_TRUNC) || ((flags & O_CREAT) && (flags & O_EXCL)));
	const char *s = trace_sb_str(&p);
	if (opath) {
		/* neither a read nor a write */
	} else if (has && ret == -ENOENT) {
		if (!replaces)
			add_read(w, s, READSET_FILE, true, ev);
	} else if (!has || ret >= 0) {
		if (writes)
			add_write(w, s, replaces);
		if (!replaces)
			add_read(w, s, READSET_FILE, false, ev);
	}
	trace_sb_free(&p);
}

static void on_sys(walk *w, const trace_ev *ev)
{
	int32_t nr = ev->sys.nr;
	const uint64_t *a = ev->sys.args;
	bool has = ev->flags & TRS_HAS_RET;
	int64_t ret = ev->sys.ret;
	bool ok = !has || ret >= 0;
	trace_sbuf p = {0};
	if (is_nr(nr, SYS_open))
		on_open(w, ev, a[1], true);
	else if (nr == SYS_openat)
		on_open(w, ev, a[2], true);
	else if (nr == SYS_openat2)
		on_open(w, ev, 0, false);
	else if (is_nr(nr, SYS_creat) && ok && arg_path(w, ev, 0, &p))
		add_write(w, trace_sb_str(&p), true);
	else if (nr == SYS_execve || nr == SYS_execveat) {
		if ((ok || ret == -ENOENT) && arg_path(w, ev, 0, &p))
			add_read(w, trace_sb_str(&p), READSET_FILE, !ok, ev);
	} else if ((is_nr(nr, SYS_rename) || nr == SYS_renameat || nr == SYS_renameat2) && ok &&
		   arg_path(w, ev, 1, &p))
		add_write(w, trace_sb_str(&p), true);
	else if ((is_nr(nr, SYS_getdents) || nr == SYS_getdents64) && ok) {
		const trace_fd *f = trace_state_fd(&w->st, ev->pid, (int32_t)a[0]);
		if (f && f->kind == TRACE_FD_FILE && f->path &&
		    norm_path(cwd_of(w, ev->pid), f->path, strstr(f->path, "...") != NULL, &p))
			add_read(w, trace_sb_str(&p), READSET_DIR, false, ev);
	} else if (nr == SYS_chdir && ok) {
		set_cwd(w, ev->pid, arg_path(w, ev, 0, &p) ? trace_sb_str(&p) : NULL);
	} else if (nr == SYS_fchdir && ok) {
		const trace_fd *f = trace_state_fd(&w->st, ev->pid, (int32_t)a[0]);
		set_cwd(w, ev->pid,
			f && f->kind == TRACE_FD_FILE && norm_path(NULL, f->path, false, &p)
			    ? trace_sb_str(&p)
			    : NULL);
	}
	w->oom |= p.oom;
	trace_sb_free(&p);
}

static void free_str(void *p)
{
	free(p);
}

void readset_free(readset *rs)
{
	if (!rs)
		return;
	for (size_t i = 0; i < rs->n; i++)
		free(rs->v[i].path);
	free(rs->v);
	strv_free(rs->written);
	*rs = (readset){0};
}

int readset_derive(const void *buf, size_t len, const char *cwd, readset *ret, sbx_err **err)
{
	trace_reader rd;
	if (trace_read_init(&rd, buf, len, err) < 0)
		return -1;
	walk w = {0};
	if (trace_state_init(&w.st, &rd.hdr, err) < 0)
		return -1;
	trace_sbuf c0 = {0};
	bool first_cwd = cwd && norm_path(NULL, cwd, false, &c0);
	bool first_seen = false;
	trace_ev ev;
	int r = 0;
	while (!w.oom && (r = trace_read_next(&rd, &ev, err)) > 0) {
		if (!first_seen && (ev.type == TR_SYSCALL || ev.type == TR_EXEC || ev.type == TR_FORK)) {
			/* the first process met is the command's (runtime records are dropped) */
			first_seen = true;
			uint32_t pid0 = ev.type == TR_FORK ? ev.fork.parent_pid : ev.pid;
			if (first_cwd) {
				set_cwd(&w, pid0, trace_sb_str(&c0));
				if (ev.type == TR_FORK)
					set_cwd(&w, ev.pid, trace_sb_str(&c0));
			}
		}
		if (ev.type == TR_FORK && !(ev.flags & 1) && !trace_map_get(&w.cwd, ev.pid)) {
			const char *pc = cwd_of(&w, ev.fork.parent_pid);
			if (pc)
				set_cwd(&w, ev.pid, pc);
		} else if (ev.type == TR_SYSCALL)
			on_sys(&w, &ev);
		else if (ev.type == TR_EXEC && ev.exec.filename) {
			trace_sbuf p = {0};
			if (norm_path(cwd_of(&w, ev.pid), ev.exec.filename, false, &p))
				add_read(&w, trace_sb_str(&p), READSET_FILE, false, &ev);
			w.oom |= p.oom;
			trace_sb_free(&p);
		}
		if (trace_state_apply(&w.st, &ev) < 0)
			w.oom = true;
	}
	trace_sb_free(&c0);
	trace_state_free(&w.st);
	trace_map_free(&w.cwd, free_str);
	trace_smap_free(&w.seen, NULL);
	trace_smap_free(&w.wseen, NULL);
	if (w.oom) {
		free(w.dropped);
		readset_free(&w.rs);
		return err_errnum(err, ENOMEM, "read set");
	}
	if (r < 0) {
		free(w.dropped);
		readset_free(&w.rs);
		return err_wrap(err, "read set");
	}
	size_t o = 0;
	for (size_t i = 0; i < w.rs.n; i++) {
		if (w.dropped[i])
			free(w.rs.v[i].path);
		else
			w.rs.v[o++] = w.rs.v[i];
	}
	w.rs.n = o;
	free(w.dropped);
	*ret = w.rs;
	return 0;
}
