/* The ptrace engine's recorder side (record mode): tracee memory read and
 * written through process_vm_readv/writev, the capture of a call's
 * arguments at its entry stop, and the records (trace_format.h) written to
 * the stream: syscalls, forks, exits, execs and determinism substitutions.
 * The stop loop that calls them is ptrace_engine.c (ptrace_priv.h). */
#include "trace/ptrace_priv.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "trace/trace_sys.h"
#include "util/fd.h"
#include "util/macro.h"
#include "util/syscalls.h"

#if defined(__x86_64__)

/* ---- tracee memory ---- */

ssize_t ptrace_mem_read(pid_t tid, uint64_t addr, void *buf, size_t n)
{
	struct iovec l = {buf, n}, r = {(void *)(uintptr_t)addr, n};
	return process_vm_readv(tid, &l, 1, &r, 1, 0);
}

int ptrace_mem_write(pid_t tid, uint64_t addr, const void *buf, size_t n)
{
	struct iovec l = {(void *)buf, n}, r = {(void *)(uintptr_t)addr, n};
	ssize_t w = process_vm_writev(tid, &l, 1, &r, 1, 0);
	return w == (ssize_t)n ? 0 : -EFAULT;
}

/* A NUL-terminated string of at most cap-1 bytes, read page by page (the
 * string may end just before an unmapped page). Returns its length incl. the
 * NUL, or -EFAULT; *trunc when it was longer (or unreadable past a point). */
int ptrace_mem_read_str(pid_t tid, uint64_t addr, char *buf, size_t cap, bool *trunc)
{
	size_t got = 0;
	*trunc = false;
	if (!addr)
		return -EFAULT;
	while (got < cap) { /* cap bytes: a NUL in the last one is an exact fit */
		size_t page = 4096 - ((addr + got) & 4095), want = cap - got < page ? cap - got : page;
		ssize_t r = ptrace_mem_read(tid, addr + got, buf + got, want);
		if (r <= 0)
			break;
		void *z = memchr(buf + got, 0, (size_t)r);
		if (z)
			return (int)((char *)z - buf) + 1;
		got += (size_t)r;
		if ((size_t)r < want)
			break;
	}
	if (got == 0)
		return -EFAULT;
	got = got < cap ? got : cap - 1;
	buf[got] = 0;
	*trunc = true;
	return (int)got + 1;
}

/* ---- records ---- */

void ptrace_rec_flush(engine *e)
{
	if (e->rfd >= 0 && e->rlen > 0 && !e->rerr) {
		if (fd_write_all(e->rfd, e->rbuf, e->rlen) < 0)
			e->rerr = errno ? errno : EIO;
	}
	e->rlen = 0;
}

static void rec_put(engine *e, const void *rec, size_t len)
{
	if (e->rfd < 0 || !e->rbuf || e->rerr)
		return;
	if (e->rlen + len > REC_BUF)
		ptrace_rec_flush(e);
	memcpy(e->rbuf + e->rlen, rec, len);
	e->rlen += len;
	e->res.records++;
}

static struct trace_rec rec_hdr(uint16_t type, size_t len, pid_t pid, pid_t tid, uint32_t flags)
{
	return (struct trace_rec){.type = type,
				  .len = (uint16_t)len,
				  .pid = (uint32_t)pid,
				  .tid = (uint32_t)tid,
				  .flags = flags,
				  .ts_ns = engine_now_ns(CLOCK_MONOTONIC)};
}

/* ts: when the substitution happened, 0 = now. A record written after the
 * reply (the tracee may have run on) carries the time of the request, so
 * that merged with the eBPF stream it lands before the call's exit, always. */
void ptrace_rec_determ_at(engine *e, const task *t, uint32_t kind, int nr, const void *val, size_t len,
			  uint64_t ts)
{
	if (e->rfd < 0)
		return;
	uint8_t buf[sizeof(struct trace_determ) + TRACE_DETERM_MAX_VALUE] = {0};
	uint32_t flags = 0;
	if (len > TRACE_DETERM_MAX_VALUE) {
		len = TRACE_DETERM_MAX_VALUE;
		flags |= TRACE_DETERM_TRUNC;
	}
	size_t total = TRACE_ALIGN(sizeof(struct trace_determ) + len);
	struct trace_determ d = {.h = rec_hdr(TR_DETERM, total, t ? t->tgid : 0, t ? t->tid : 0, flags),
				 .kind = kind,
				 .value_len = (uint32_t)len,
				 .nr = nr};
	if (ts)
		d.h.ts_ns = ts;
	memcpy(buf, &d, sizeof(d));
	memcpy(buf + sizeof(d), val, len);
	rec_put(e, buf, total);
}

void ptrace_rec_determ(engine *e, const task *t, uint32_t kind, int nr, const void *val, size_t len)
{
	ptrace_rec_determ_at(e, t, kind, nr, val, len, 0);
}

void ptrace_rec_syscall(engine *e, task *t, bool has_ret, int64_t ret)
{
	uint8_t buf[sizeof(struct trace_syscall) + 2 * TRACE_MAX_STR + 8] = {0};
	size_t total = TRACE_ALIGN(sizeof(struct trace_syscall) + t->slen[0] + t->slen[1]);
	uint32_t flags = t->sflags | (has_ret ? TRS_HAS_RET : 0) | (t->emulated ? TRS_EMULATED : 0);
	struct trace_syscall s = {.h = rec_hdr(TR_SYSCALL, total, t->tgid, t->tid, flags),
				  .nr = t->nr,
				  .str0_len = t->slen[0],
				  .str1_len = t->slen[1],
				  .ret = has_ret ? ret : 0,
				  .enter_ns = t->enter_ns};
	memcpy(s.args, t->args, sizeof(s.args));
	memcpy(buf, &s, sizeof(s));
	memcpy(buf + sizeof(s), t->str[0], t->slen[0]);
	memcpy(buf + sizeof(s) + t->slen[0], t->str[1], t->slen[1]);
	rec_put(e, buf, total);
	t->in_sys = false;
}

void ptrace_rec_fork(engine *e, const task *child, const task *parent, bool thread)
{
	struct trace_fork f = {.h = rec_hdr(TR_FORK, sizeof(f), child->tgid, child->tid, thread ? 1 : 0),
			       .parent_pid = (uint32_t)(parent ? parent->tgid : 0),
			       .parent_tid = (uint32_t)(parent ? parent->tid : 0)};
	rec_put(e, &f, sizeof(f));
}

void ptrace_rec_exit(engine *e, pid_t tgid, pid_t tid, int status)
{
	struct trace_exit x = {.h = rec_hdr(TR_EXIT, sizeof(x), tgid, tid, tid == tgid ? 1 : 0),
			       .status = status};
	rec_put(e, &x, sizeof(x));
}

void ptrace_rec_exec(engine *e, const task *t)
{
	if (e->rfd < 0)
		return;
	char path[64], file[TRACE_MAX_STR], argv[TRACE_MAX_ARGV];
	ssize_t fl;
	if (t->in_sys && (t->nr == SYS_execve || t->nr == SYS_execveat) && t->slen[0] > 0) {
		/* recording: the name as given to execve (a script's, not its interpreter's) */
		fl = t->slen[0] - 1;
		memcpy(file, t->str[0], (size_t)fl + 1);
	} else {
		snprintf(path, sizeof(path), "/proc/%d/exe", t->tid);
		fl = readlink(path, file, sizeof(file) - 1);
		fl = fl < 0 ? 0 : fl;
		file[fl] = 0;
	}
	snprintf(path, sizeof(path), "/proc/%d/cmdline", t->tid);
	ssize_t al = 0;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		al = read(fd, argv, sizeof(argv));
		al = al < 0 ? 0 : al;
	}
	uint32_t flags = 0, argc = 0;
	char more;
	if (al == (ssize_t)sizeof(argv) && read(fd, &more, 1) == 1)
		flags |= 1;
	while (al > 0 && argv[al - 1] != 0)
		al--; /* whole strings only */
	for (ssize_t i = 0; i < al; i++)
		argc += argv[i] == 0;
	uint8_t buf[sizeof(struct trace_exec) + sizeof(file) + sizeof(argv) + 8] = {0};
	size_t total = TRACE_ALIGN(sizeof(struct trace_exec) + (size_t)fl + 1 + (size_t)al);
	struct trace_exec x = {.h = rec_hdr(TR_EXEC, total, t->tgid, t->tid, flags),
			       .filename_len = (uint16_t)(fl + 1),
			       .argv_len = (uint16_t)al,
			       .argc = argc};
	memcpy(buf, &x, sizeof(x));
	memcpy(buf + sizeof(x), file, (size_t)fl + 1);
	memcpy(buf + sizeof(x) + fl + 1, argv, (size_t)al);
	rec_put(e, buf, total);
}

/* ---- a call's entry (record mode) ---- */

void ptrace_rec_capture(engine *e, task *t, int nr, const uint64_t *args)
{
	t->nr = nr;
	memcpy(t->args, args, sizeof(t->args));
	t->enter_ns = engine_now_ns(CLOCK_MONOTONIC);
	t->sflags = 0;
	t->slen[0] = t->slen[1] = 0;
	t->emulated = false;
	uint8_t bits = trace_sys_str_args(nr);
	for (int i = 0, k = 0; i < 6 && k < 2; i++) {
		if (!(bits & (1u << i)))
			continue;
		bool trunc;
		int n = ptrace_mem_read_str(t->tid, args[i], t->str[k], TRACE_MAX_STR, &trunc);
		if (n < 0)
			t->sflags |= k ? TRS_STR1_FAULT : TRS_STR0_FAULT;
		else {
			t->slen[k] = (uint16_t)n;
			if (trunc)
				t->sflags |= k ? TRS_STR1_TRUNC : TRS_STR0_TRUNC;
		}
		k++;
	}
	t->in_sys = true;
}

#endif

/* `path` as the tracee would open it, through its root, cwd or dirfd. */
void tracee_path(char *full, size_t cap, pid_t tid, int dirfd, const char *path)
{
	if (path[0] == '/')
		snprintf(full, cap, "/proc/%d/root%s", tid, path);
	else if (dirfd == AT_FDCWD)
		snprintf(full, cap, "/proc/%d/cwd/%s", tid, path);
	else
		snprintf(full, cap, "/proc/%d/fd/%d/%s", tid, dirfd, path);
}
