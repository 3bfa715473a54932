/* The process and descriptor model a trace is read against (trace_view.h:
 * trace_state_*): which process has which descriptor open on what path,
 * its cwd, fork and exec. Pure. */
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
#include <unistd.h>

#include "trace/trace_sys.h"
#include "util/err.h"
#include "util/json.h"

/* ---- the process and descriptor model ------------------------------------------------ */

static void proc_free(void *v)
{
	trace_proc *p = v;
	if (!p)
		return;
	for (size_t i = 0; i < p->n_fds; i++)
		free(p->fds[i].path);
	free(p->fds);
	free(p->name);
	free(p);
}

int trace_check_arch(const struct trace_file_header *h, sbx_err **err)
{
	if (h->arch != TRACE_ARCH_NATIVE)
		return err_set(
		    err, SBX_E_INVALID_ARGUMENT, EINVAL,
		    "trace recorded on architecture 0x%x, this host is 0x%x: syscall numbers differ", h->arch,
		    TRACE_ARCH_NATIVE);
	return 0;
}

int trace_state_init(trace_state *st, const struct trace_file_header *h, sbx_err **err)
{
	*st = (trace_state){.hdr = *h};
	return trace_check_arch(h, err);
}

void trace_state_free(trace_state *st)
{
	trace_map_free(&st->procs, proc_free);
}

trace_proc *trace_state_proc(const trace_state *st, uint32_t pid)
{
	return trace_map_get(&st->procs, pid);
}

static trace_proc *proc_get(trace_state *st, uint32_t pid)
{
	void **slot = trace_map_slot(&st->procs, pid);
	if (!slot)
		return NULL;
	if (!*slot) {
		trace_proc *p = calloc(1, sizeof(*p));
		if (!p)
			return NULL; /* the NULL value left behind reads as absent */
		p->pid = pid;
		*slot = p;
		st->n_procs++;
	}
	return *slot;
}

static size_t fd_pos(const trace_proc *p, int32_t fd, bool *found)
{
	size_t lo = 0, hi = p->n_fds;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->fds[mid].fd < fd)
			lo = mid + 1;
		else
			hi = mid;
	}
	*found = lo < p->n_fds && p->fds[lo].fd == fd;
	return lo;
}

static trace_fd *fd_find(const trace_proc *p, int64_t fd)
{
	if (!p || fd < 0 || fd > INT32_MAX)
		return NULL;
	bool found;
	size_t i = fd_pos(p, (int32_t)fd, &found);
	return found ? &p->fds[i] : NULL;
}

const trace_fd *trace_state_fd(const trace_state *st, uint32_t pid, int64_t fd)
{
	return fd_find(trace_state_proc(st, pid), fd);
}

static int fd_put(trace_proc *p, int64_t fd, uint8_t kind, bool cloexec, const char *path)
{
	if (fd < 0 || fd > INT32_MAX)
		return 0;
	char *copy = strdup(path);
	if (!copy)
		return -ENOMEM;
	bool found;
	size_t i = fd_pos(p, (int32_t)fd, &found);
	if (found) {
		free(p->fds[i].path);
	} else {
		if (p->n_fds == p->cap_fds) {
			size_t cap = p->cap_fds ? p->cap_fds * 2 : 8;
			trace_fd *n = realloc(p->fds, cap * sizeof(*n));
			if (!n) {
				free(copy);
				return -ENOMEM;
			}
			p->fds = n;
			p->cap_fds = cap;
		}
		memmove(p->fds + i + 1, p->fds + i, (p->n_fds - i) * sizeof(*p->fds));
		p->n_fds++;
	}
	p->fds[i] = (trace_fd){.fd = (int32_t)fd, .kind = kind, .cloexec = cloexec, .path = copy};
	return 0;
}

static void fd_del_range(trace_proc *p, uint64_t first, uint64_t last)
{
	size_t o = 0;
	for (size_t i = 0; i < p->n_fds; i++) {
		if ((uint64_t)p->fds[i].fd >= first && (uint64_t)p->fds[i].fd <= last)
			free(p->fds[i].path);
		else
			p->fds[o++] = p->fds[i];
	}
	p->n_fds = o;
}

static int fd_copy(trace_proc *to, const trace_proc *from)
{
	for (size_t i = 0; i < from->n_fds; i++) {
		const trace_fd *f = &from->fds[i];
		bool found;
		fd_pos(to, f->fd, &found);
		if (!found && fd_put(to, f->fd, f->kind, f->cloexec, f->path) < 0)
			return -ENOMEM;
	}
	return 0;
}

/* dirfd's path joined with path, into out (capped). */
static void join_path(const trace_state *st, uint32_t pid, bool have_dirfd, int64_t dirfd, const char *path,
		      trace_sbuf *out)
{
	const trace_fd *d = NULL;
	if (path[0] != '/' && have_dirfd && (int32_t)dirfd != AT_FDCWD)
		d = trace_state_fd(st, pid, (int32_t)dirfd);
	if (d && d->kind == TRACE_FD_FILE) {
		size_t n = strlen(d->path);
		trace_sb_add(out, d->path, n);
		if (*path) {
			if (!n || d->path[n - 1] != '/')
				trace_sb_lit(out, "/");
			trace_sb_add(out, path, strlen(path));
		}
	} else
		trace_sb_add(out, path, strlen(path));
	if (out->len > PATH_CAP && !out->oom) {
		out->len = PATH_CAP;
		memcpy(out->p + PATH_CAP - 3, "...", 4);
	}
}

bool trace_state_arg_path(const trace_state *st, const trace_ev *ev, int k, trace_sbuf *out)
{
	if (ev->type != TR_SYSCALL || k < 0 || k > 1 || !ev->sys.str[k])
		return false;
	int i = trace_str_arg_index(ev->sys.nr, k);
	if (i < 0)
		return false;
	bool have_dirfd = i > 0 && (trace_sys_fd_args(ev->sys.nr) & (1u << (i - 1)));
	join_path(st, ev->pid, have_dirfd, have_dirfd ? (int64_t)ev->sys.args[i - 1] : 0, ev->sys.str[k],
		  out);
	if (ev->flags & (k ? TRS_STR1_TRUNC : TRS_STR0_TRUNC))
		trace_sb_lit(out, "...");
	return true;
}

/* The path a successful open-like call's new descriptor refers to. */
static int set_opened(trace_state *st, trace_proc *p, const trace_ev *ev, bool cloexec)
{
	trace_sbuf b = {0};
	if (!trace_state_arg_path(st, ev, 0, &b))
		trace_sb_lit(&b, "?");
	int r = b.oom ? -ENOMEM : fd_put(p, ev->sys.ret, TRACE_FD_FILE, cloexec, trace_sb_str(&b));
	trace_sb_free(&b);
	return r;
}

static int dup_fd(trace_proc *p, int64_t from, int64_t to, bool cloexec)
{
	const trace_fd *f = fd_find(p, from);
	if (!f) {
		/* the source is unknown: so is the copy (it may replace a known one) */
		if (to >= 0 && to <= INT32_MAX)
			fd_del_range(p, (uint64_t)to, (uint64_t)to);
		return 0;
	}
	if (from == to)
		return 0;
	uint8_t kind = f->kind;
	_cleanup_free_ char *path = strdup(f->path); /* fd_set may move the array f points into */
	if (!path)
		return -ENOMEM;
	return fd_put(p, to, kind, cloexec, path);
}

static int apply_sys(trace_state *st, const trace_ev *ev)
{
	const trace_sysent *si = trace_sys_entry(ev->sys.nr);
	if (!si || si->op == OP_NONE)
		return 0;
	trace_proc *p = proc_get(st, ev->pid);
	if (!p)
		return -ENOMEM;
	bool has = ev->flags & TRS_HAS_RET;
	int64_t ret = ev->sys.ret;
	const uint64_t *a = ev->sys.args;
	/* close releases the descriptor even when it reports an error (EINTR,
	 * EIO); only EBADF means there was none. */
	if (si->op == OP_CLOSE) {
		if ((!has || ret != -EBADF) && (int32_t)a[0] >= 0)
			fd_del_range(p, (uint32_t)(int32_t)a[0], (uint32_t)(int32_t)a[0]);
		return 0;
	}
	if (!has || ret < 0)
		return 0;
	switch (si->op) {
	case OP_OPEN:
	case OP_OPENAT:
	case OP_OPEN_TREE: {
		uint64_t fl = si->op == OP_OPEN ? a[1] : a[2];
		return set_opened(st, p, ev, fl & O_CLOEXEC);
	}
	case OP_OPENAT2:
	case OP_CREAT:
		return set_opened(st, p, ev, false);
	case OP_OPEN_BY_HANDLE:
		return fd_put(p, ret, TRACE_FD_FILE, a[2] & O_CLOEXEC, "(file handle)");
	case OP_DUP:
	case OP_DUP2:
		return dup_fd(p, (int32_t)a[0], ret, false);
	case OP_DUP3:
		return dup_fd(p, (int32_t)a[0], ret, a[2] & O_CLOEXEC);
	case OP_FCNTL: {
		int cmd = (int)a[1];
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			return dup_fd(p, (int32_t)a[0], ret, cmd == F_DUPFD_CLOEXEC);
		trace_fd *f = cmd == F_SETFD ? fd_find(p, (int32_t)a[0]) : NULL;
		if (f)
			f->cloexec = a[2] & FD_CLOEXEC;
		return 0;
	}
	case OP_IOCTL: {
		trace_fd *f = fd_find(p, (int32_t)a[0]);
		if (f && ((uint32_t)a[1] == FIOCLEX || (uint32_t)a[1] == FIONCLEX))
			f->cloexec = (uint32_t)a[1] == FIOCLEX;
		return 0;
	}
	case OP_CLOSE_RANGE: {
		uint64_t first = (uint32_t)a[0], last = (uint32_t)a[1];
		if (a[2] & 4 /* CLOSE_RANGE_CLOEXEC */) {
			for (size_t i = 0; i < p->n_fds; i++)
				if ((uint64_t)p->fds[i].fd >= first && (uint64_t)p->fds[i].fd <= last)
					p->fds[i].cloexec = true;
		} else if (first <= last)
			fd_del_range(p, first, last);
		return 0;
	}
	case OP_SOCKET: {
		trace_sbuf b = {0};
		trace_sb_lit(&b, "socket:[");
		trace_sb_socket(&b, (int32_t)a[0], (int32_t)a[1] & 0xf);
		trace_sb_lit(&b, "]");
		int r =
		    b.oom ? -ENOMEM : fd_put(p, ret, TRACE_FD_SOCKET, a[1] & SOCK_CLOEXEC, trace_sb_str(&b));
		trace_sb_free(&b);
		return r;
	}
	case OP_ACCEPT: {
		const trace_fd *l = trace_state_fd(st, ev->pid, (int32_t)a[0]);
		bool cl = streq(si->name, "accept4") && (a[3] & SOCK_CLOEXEC);
		if (!l)
			return fd_put(p, ret, TRACE_FD_SOCKET, cl, "socket:[accepted]");
		_cleanup_free_ char *path = strdup(l->path);
		return path ? fd_put(p, ret, TRACE_FD_SOCKET, cl, path) : -ENOMEM;
	}
	case OP_ANON: {
		if (streq(si->name, "signalfd4") && (int32_t)a[0] != -1)
			return 0; /* signalfd4 on an existing descriptor updates it */
		bool cl = si->cl_arg == CL_ALWAYS || (si->cl_arg >= 0 && (a[si->cl_arg] & si->cl_mask));
		return fd_put(p, ret, TRACE_FD_OTHER, cl, si->label);
	}
	case OP_MEMFD: {
		trace_sbuf b = {0};
		trace_sb_lit(&b, "memfd:");
		if (ev->sys.str[0])
			trace_sb_add(&b, ev->sys.str[0], strlen(ev->sys.str[0]));
		int r =
		    b.oom ? -ENOMEM : fd_put(p, ret, TRACE_FD_OTHER, a[1] & si->cl_mask, trace_sb_str(&b));
		trace_sb_free(&b);
		return r;
	}
	}
	return 0;
}

static int apply_fork(trace_state *st, const trace_ev *ev)
{
	if (ev->flags & 1) { /* a thread: shares its process's table */
		st->n_threads++;
		return proc_get(st, ev->pid) ? 0 : -ENOMEM;
	}
	trace_proc *parent = proc_get(st, ev->fork.parent_pid);
	if (!parent)
		return -ENOMEM;
	trace_proc *old = trace_state_proc(st, ev->pid);
	if (old && old != parent && !old->forked && !old->exited) {
		/* Seen before its fork record (records of several CPUs): adopt it. */
		old->forked = true;
		if (!old->name && parent->name && !(old->name = strdup(parent->name)))
			return -ENOMEM;
		return fd_copy(old, parent);
	}
	trace_proc *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->pid = ev->pid;
	p->forked = true;
	if ((parent->name && !(p->name = strdup(parent->name))) || fd_copy(p, parent) < 0) {
		proc_free(p);
		return -ENOMEM;
	}
	void **slot = trace_map_slot(&st->procs, ev->pid);
	if (!slot) {
		proc_free(p);
		return -ENOMEM;
	}
	proc_free(*slot); /* a reused pid (or a fork of itself in a hostile stream): after the copy */
	*slot = p;
	st->n_procs++;
	return 0;
}

static int apply_exec(trace_state *st, const trace_ev *ev)
{
	trace_proc *p = proc_get(st, ev->pid);
	if (!p)
		return -ENOMEM;
	size_t o = 0;
	for (size_t i = 0; i < p->n_fds; i++) {
		if (p->fds[i].cloexec)
			free(p->fds[i].path);
		else
			p->fds[o++] = p->fds[i];
	}
	p->n_fds = o;
	const char *name = ev->exec.argv_len && ev->exec.argv[0] ? ev->exec.argv : ev->exec.filename;
	if (name) {
		char *n = strdup(name);
		if (!n)
			return -ENOMEM;
		free(p->name);
		p->name = n;
	}
	p->exited = false;
	return 0;
}

int trace_state_apply(trace_state *st, const trace_ev *ev)
{
	switch (ev->type) {
	case TR_SYSCALL:
		return apply_sys(st, ev);
	case TR_FORK:
		return apply_fork(st, ev);
	case TR_EXEC:
		return apply_exec(st, ev);
	case TR_EXIT:
		if (ev->flags & 1) {
			trace_proc *p = proc_get(st, ev->pid);
			if (!p)
				return -ENOMEM;
			p->exited = true;
			fd_del_range(p, 0, UINT64_MAX); /* all closed by the kernel */
		}
		return 0;
	case TR_DETERM:
		return proc_get(st, ev->pid) ? 0 : -ENOMEM;
	default:
		return 0;
	}
}
