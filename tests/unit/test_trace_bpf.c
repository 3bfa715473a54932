/* Unit tests: src/trace/bpf_rec.c, the eBPF syscall recorder. Needs root (or
 * CAP_BPF + CAP_PERFMON) and kernel BTF; skips otherwise.
 *
 * Each recording test forks a child that unshares its pid namespace and forks
 * the traced process (pid 1 there). That process waits on a pipe until the
 * recorder runs, performs a known sequence, and exits; the stream is then
 * parsed and checked record by record. The test process itself stays outside
 * the namespace, so none of its syscalls may appear. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/bpf_rec.h"
#include "trace/trace_format.h"
#include "unit.h"
#include "util/log.h"
#include "util/macro.h"

#define MISSING "/nonexistent-sbx-test"
#define OUTSIDE "/nonexistent-sbx-outside"

__attribute__((constructor)) static void init_log(void)
{
	log_init();
}

#define SKIP_UNLESS_AVAILABLE()                                                                              \
	do {                                                                                                 \
		if (!bpf_rec_available() && geteuid() != 0)                                                  \
			SKIP_OK("BPF recorder unavailable (needs root or CAP_BPF+CAP_PERFMON)");             \
		if (!bpf_rec_available())                                                                    \
			SKIP("BPF recorder unavailable as root (BTF, bpf(2) or the kernel's tracepoints)");  \
	} while (0)

/* A traced process in a new pid namespace, parked until traced_run(). */
typedef struct traced {
	pid_t outer;	   /* the child that unshared; reaps the traced process and exits with its status */
	pid_t pid;	   /* the traced process, as the test sees it */
	int go_fd;	   /* write end: starts the scenario */
	int out_fd;	   /* read end of a pipe the scenario writes to */
	uint64_t dev, ino; /* its pid namespace */
} traced;

/* The fds a traced child finds its pipes on after the exec below. */
enum { CHILD_GO_FD = 200, CHILD_DATA_FD, CHILD_ID_FD, CHILD_PHASE2_FD };
#define CHILD_ENV "SBX_TEST_TRACED_FN"

static int phase2[2]; /* two_phases's second pipe: its own test sets it */

extern char **environ;

/* Forks a child that only execs this binary again (traced_child_main, at the
 * end of this file, takes over there): it unshares CLONE_NEWPID and forks the
 * process named `fn`. The exec matters: this process has threads (the
 * recorder's linger and drain threads), and a child forked from it may
 * inherit a lock one of them held, such as ASan's allocator lock, which
 * pthread_create or fork in the child would then wait on forever. Returns 0
 * once the traced process is blocked reading the go pipe, so nothing it does
 * before the recorder starts can show up (or be half-recorded). */
static int traced_spawn(traced *t, const char *fn)
{
	int go[2], data[2], idp[2];
	if (pipe2(go, O_CLOEXEC) < 0 || pipe2(data, O_CLOEXEC) < 0 || pipe2(idp, O_CLOEXEC) < 0)
		return -1;
	/* everything the child needs is made before the fork: after it, only
	 * dup2 and execve */
	size_t n = 0;
	while (environ[n])
		n++;
	_cleanup_free_ char **envp = calloc(n + 2, sizeof(*envp));
	char var[64], self[] = "/proc/self/exe";
	if (!envp)
		return -1;
	memcpy(envp, environ, n * sizeof(*envp));
	snprintf(var, sizeof(var), "%s=%s", CHILD_ENV, fn);
	envp[n] = var;
	char *argv[] = {self, NULL};
	fflush(NULL);
	t->outer = fork();
	if (t->outer < 0)
		return -1;
	if (t->outer == 0) {
		if (dup2(go[0], CHILD_GO_FD) < 0 || dup2(data[1], CHILD_DATA_FD) < 0 ||
		    dup2(idp[1], CHILD_ID_FD) < 0 || (phase2[0] >= 0 && dup2(phase2[0], CHILD_PHASE2_FD) < 0))
			_exit(119);
		execve(self, argv, envp);
		_exit(118);
	}
	close(go[0]);
	close(data[1]);
	close(idp[1]);
	t->go_fd = go[1];
	t->out_fd = data[0];
	if (read(idp[0], &t->pid, sizeof(t->pid)) != sizeof(t->pid))
		return -1;
	close(idp[0]);

	char path[64];
	struct stat st;
	snprintf(path, sizeof(path), "/proc/%d/ns/pid", (int)t->pid);
	if (stat(path, &st) < 0)
		return -1;
	t->dev = st.st_dev;
	t->ino = st.st_ino;

	/* /proc/PID/syscall names the syscall a task is blocked in. */
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)t->pid);
	char want[16];
	snprintf(want, sizeof(want), "%d ", (int)SYS_read);
	for (int i = 0; i < 5000; i++) {
		char buf[128] = "";
		FILE *f = fopen(path, "re");
		if (f) {
			(void)!fgets(buf, sizeof(buf), f);
			fclose(f);
		}
		if (startswith(buf, want))
			return 0;
		usleep(1000);
	}
	return -1;
}

/* Starts the scenario and waits for it; returns the traced process's exit code. */
static int traced_run(traced *t)
{
	if (write(t->go_fd, "g", 1) != 1)
		return -1;
	t->go_fd = safe_close(t->go_fd);
	int st;
	if (RETRY_EINTR(waitpid(t->outer, &st, 0)) < 0)
		return -1;
	t->outer = 0;
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A failed CHECK returns early: the parked processes must not outlive it. */
static void traced_cleanup(traced *t)
{
	if (t->outer > 0) {
		if (t->pid > 0)
			kill(t->pid, SIGKILL);
		kill(t->outer, SIGKILL);
		(void)RETRY_EINTR(waitpid(t->outer, NULL, 0));
	}
	safe_close(t->go_fd);
	safe_close(t->out_fd);
}
#define _cleanup_traced_ _cleanup_(traced_cleanup)

/* A failed CHECK between start and stop must not leave a recorder running. */
static void rec_stopp(bpf_rec **r)
{
	if (*r)
		bpf_rec_stop(*r, NULL, NULL);
}
#define _cleanup_rec_ _cleanup_(rec_stopp)

/* The whole stream, read back from a memfd. */
typedef struct stream {
	uint8_t *data;
	size_t len;
} stream;

static int stream_read(int fd, stream *s)
{
	struct stat st;
	if (fstat(fd, &st) < 0)
		return -1;
	s->len = (size_t)st.st_size;
	s->data = malloc(s->len + 1);
	if (!s->data || pread(fd, s->data, s->len, 0) != (ssize_t)s->len)
		return -1;
	return 0;
}

/* Checks the header and that records tile the stream exactly. */
static bool stream_valid(const stream *s)
{
	if (s->len < sizeof(struct trace_file_header))
		return false;
	const struct trace_file_header *h = (const void *)s->data;
	if (memcmp(h->magic, TRACE_MAGIC, 8) != 0 || h->version != TRACE_VERSION ||
	    h->recorder != TRACE_REC_BPF)
		return false;
	size_t off = sizeof(*h);
	while (off < s->len) {
		const struct trace_rec *r = (const void *)(s->data + off);
		if (s->len - off < sizeof(*r) || r->len < sizeof(*r) || r->len % 8 || r->len > s->len - off)
			return false;
		off += r->len;
	}
	return off == s->len;
}

#define FOR_EACH_REC(s, r)                                                                                   \
	for (const struct trace_rec *r = (const void *)((s)->data + sizeof(struct trace_file_header));       \
	     (const uint8_t *)r < (s)->data + (s)->len; r = (const void *)((const uint8_t *)r + r->len))

static const char *sys_str0(const struct trace_syscall *c)
{
	return c->str0_len ? (const char *)(c + 1) : NULL;
}

/* The first TR_SYSCALL of nr by tid, or NULL. */
static const struct trace_syscall *find_syscall(const stream *s, uint32_t tid, long nr)
{
	FOR_EACH_REC(s, r)
	{
		const struct trace_syscall *c = (const void *)r;
		if (r->type == TR_SYSCALL && r->tid == tid && c->nr == nr)
			return c;
	}
	return NULL;
}

static const struct trace_rec *find_rec(const stream *s, uint16_t type, uint32_t tid)
{
	FOR_EACH_REC(s, r)
	{
		if (r->type == type && r->tid == tid)
			return r;
	}
	return NULL;
}

static void *thread_main(void *arg)
{
	(void)arg;
	syscall(SYS_getpid);
	return NULL;
}

/* The scenario, as pid 1 of its namespace. */
static int scenario(int data_fd)
{
	if (syscall(SYS_openat, AT_FDCWD, MISSING, O_RDONLY) != -1 || errno != ENOENT)
		return 10;
	if (syscall(SYS_getpid) != 1)
		return 11;
	if (write(data_fd, "hello", 5) != 5)
		return 12;
	pthread_t th;
	if (pthread_create(&th, NULL, thread_main, NULL) != 0 || pthread_join(th, NULL) != 0)
		return 13;
	pid_t p = fork();
	if (p < 0)
		return 14;
	if (p == 0) {
		char *argv[] = {"true", "arg1", NULL};
		execve("/bin/true", argv, (char *[]){NULL});
		_exit(15);
	}
	int st;
	if (waitpid(p, &st, 0) != p || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
		return 16;
	return 3;
}

TEST(records_scenario)
{
	SKIP_UNLESS_AVAILABLE();
	_cleanup_traced_ traced t = {.go_fd = -1, .out_fd = -1};
	CHECK(traced_spawn(&t, "scenario") == 0);
	_cleanup_close_ int out = memfd_create("trace", MFD_CLOEXEC);
	CHECK(out >= 0);
	_cleanup_rec_ bpf_rec *rec = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	int r = bpf_rec_start(t.dev, t.ino, out, &rec, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	/* a syscall outside the namespace while recording: must not appear */
	CHECK(open(OUTSIDE, O_RDONLY | O_CLOEXEC) < 0);
	CHECK(traced_run(&t) == 3);
	char buf[8] = "";
	CHECK(read(t.out_fd, buf, sizeof(buf)) == 5);
	bpf_rec_stats stats;
	r = bpf_rec_stop(TAKE_PTR(rec), &stats, &e);
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);

	stream s = {0};
	_cleanup_free_ uint8_t *data = NULL;
	CHECK(stream_read(out, &s) == 0);
	data = s.data;
	CHECK(stream_valid(&s));
	CHECK(stats.bytes == s.len);
	CHECK(stats.lost == 0);

	uint64_t n = 0;
	FOR_EACH_REC(&s, rr)
	{
		n++;
		CHECK(rr->type != TR_LOST);
		/* only the namespace's tasks, with their namespace pids: 1, its thread, its child */
		CHECK(rr->pid == 1 || rr->pid == 2 || rr->pid == 3);
		if (rr->type == TR_SYSCALL) {
			const struct trace_syscall *c = (const void *)rr;
			CHECK(!c->str0_len || !sys_str0(c) || !strstr(sys_str0(c), OUTSIDE));
			if (rr->flags & TRS_HAS_RET)
				CHECK(c->enter_ns <= rr->ts_ns);
			/* the exit retries strings that were not paged in at entry */
			if (rr->flags & (TRS_STR0_FAULT | TRS_STR1_FAULT))
				fprintf(stderr, "  note: unreadable string in syscall %d of tid %u\n", c->nr,
					rr->tid);
		}
	}
	CHECK(n == stats.records);

	const struct trace_syscall *c = find_syscall(&s, 1, SYS_openat);
	CHECK(c && (c->h.flags & TRS_HAS_RET) && c->ret == -ENOENT);
	CHECK(c->h.pid == 1 && (int32_t)c->args[0] == AT_FDCWD && c->args[2] == O_RDONLY);
	CHECK(c->str0_len == sizeof(MISSING) && c->str1_len == 0);
	CHECK_STREQ(sys_str0(c), MISSING);
	CHECK(c->h.len == TRACE_ALIGN(sizeof(*c) + sizeof(MISSING)));

	c = find_syscall(&s, 1, SYS_getpid);
	CHECK(c && c->ret == 1 && (c->h.flags & TRS_HAS_RET));
	c = find_syscall(&s, 1, SYS_write);
	CHECK(c && c->ret == 5 && c->args[2] == 5);

	/* the thread: TR_FORK with flags 1, pid 1, its own tid; exits alone */
	const struct trace_fork *f = NULL;
	FOR_EACH_REC(&s, rr)
	{
		if (rr->type == TR_FORK && (rr->flags & 1))
			f = (const void *)rr;
	}
	CHECK(f && f->h.pid == 1 && f->h.tid != 1 && f->parent_pid == 1 && f->parent_tid == 1);
	uint32_t thread_tid = f->h.tid;
	c = find_syscall(&s, thread_tid, SYS_getpid);
	CHECK(c && c->h.pid == 1 && c->ret == 1);
	const struct trace_exit *x = (const void *)find_rec(&s, TR_EXIT, thread_tid);
	CHECK(x && x->h.pid == 1 && x->h.flags == 0);

	/* the child: fork, exec with argv, execve returning 0, exit */
	f = NULL;
	FOR_EACH_REC(&s, rr)
	{
		if (rr->type == TR_FORK && !(rr->flags & 1))
			f = (const void *)rr;
	}
	CHECK(f && f->h.tid != 1 && f->h.tid != thread_tid && f->h.pid == f->h.tid && f->parent_pid == 1 &&
	      f->parent_tid == 1);
	uint32_t child = f->h.pid;
	const struct trace_exec *ex = (const void *)find_rec(&s, TR_EXEC, child);
	CHECK(ex && ex->h.pid == child && ex->h.flags == 0);
	CHECK(ex->filename_len == sizeof("/bin/true") && ex->argc == 2 &&
	      ex->argv_len == sizeof("true\0arg1"));
	const char *fn = (const char *)(ex + 1);
	CHECK_STREQ(fn, "/bin/true");
	CHECK(memcmp(fn + ex->filename_len, "true\0arg1", ex->argv_len) == 0);
	c = find_syscall(&s, child, SYS_execve);
	CHECK(c && c->ret == 0 && (c->h.flags & TRS_HAS_RET));
	CHECK_STREQ(sys_str0(c), "/bin/true");
	CHECK((const void *)ex < (const void *)c); /* the exec happens inside execve */
	x = (const void *)find_rec(&s, TR_EXIT, child);
	CHECK(x && x->h.flags == 1 && x->status == 0);
	c = find_syscall(&s, 1, SYS_wait4);
	CHECK(c && c->ret == child);

	/* exit_group: recorded at entry, no return value; then the process exit */
	c = find_syscall(&s, 1, SYS_exit_group);
	CHECK(c && !(c->h.flags & TRS_HAS_RET) && c->args[0] == 3);
	x = (const void *)find_rec(&s, TR_EXIT, 1);
	CHECK(x && x->h.flags == 1 && x->status == 3 << 8);
	CHECK((const void *)c < (const void *)x);
}

static void *exec_thread(void *arg)
{
	char *argv[] = {"true", NULL};
	execve("/bin/true", argv, (char *[]){NULL});
	return NULL;
}

/* A thread that is not the leader calls execve: the kernel gives it the
 * leader's pid (de_thread) before the syscall returns. */
static int thread_exec(int data_fd)
{
	pthread_t th;
	if (pthread_create(&th, NULL, exec_thread, NULL) != 0)
		return 20;
	pause();
	return 21;
}

TEST(exec_from_a_thread)
{
	SKIP_UNLESS_AVAILABLE();
	_cleanup_traced_ traced t = {.go_fd = -1, .out_fd = -1};
	CHECK(traced_spawn(&t, "thread_exec") == 0);
	_cleanup_close_ int out = memfd_create("trace", MFD_CLOEXEC);
	CHECK(out >= 0);
	_cleanup_rec_ bpf_rec *rec = NULL;
	CHECK(bpf_rec_start(t.dev, t.ino, out, &rec, NULL) == 0);
	CHECK(traced_run(&t) == 0);
	CHECK(bpf_rec_stop(TAKE_PTR(rec), NULL, NULL) == 0);

	stream s = {0};
	_cleanup_free_ uint8_t *data = NULL;
	CHECK(stream_read(out, &s) == 0);
	data = s.data;
	CHECK(stream_valid(&s));
	const struct trace_fork *f = NULL;
	FOR_EACH_REC(&s, rr)
	{
		if (rr->type == TR_FORK)
			f = (const void *)rr;
		/* the execve completes as the leader, never as the thread */
		if (rr->type == TR_SYSCALL && ((const struct trace_syscall *)rr)->nr == SYS_execve)
			CHECK(rr->pid == 1 && rr->tid == 1);
	}
	CHECK(f && f->h.flags == 1 && f->h.pid == 1 && f->h.tid != 1);
	const struct trace_syscall *c = find_syscall(&s, 1, SYS_execve);
	CHECK(c && c->ret == 0 && (c->h.flags & TRS_HAS_RET));
	CHECK_STREQ(sys_str0(c), "/bin/true");
	const struct trace_exec *ex = (const void *)find_rec(&s, TR_EXEC, 1);
	CHECK(ex && ex->h.pid == 1 && ex->argc == 1);
	CHECK((const void *)ex < (const void *)c);
	/* the old leader died in de_thread, alone; the process exits later */
	const struct trace_exit *x = (const void *)find_rec(&s, TR_EXIT, 1);
	CHECK(x && x->h.flags == 0 && (const void *)x < (const void *)ex);
	c = find_syscall(&s, 1, SYS_exit_group);
	CHECK(c && c->args[0] == 0);
}

#define BURST 200000

static int burst(int data_fd)
{
	for (int i = 0; i < BURST; i++)
		syscall(SYS_getppid);
	/* straight to the kernel: _exit() may make more syscalls (sanitizers do) */
	syscall(SYS_exit_group, 0);
	return 1;
}

/* A ring buffer of one page cannot keep up with a burst of getppid between
 * two drain passes: the drops must show up as TR_LOST, and every syscall must
 * be either recorded or counted. */
TEST(lost_events_are_counted_exactly)
{
	SKIP_UNLESS_AVAILABLE();
	_cleanup_traced_ traced t = {.go_fd = -1, .out_fd = -1};
	CHECK(traced_spawn(&t, "burst") == 0);
	_cleanup_close_ int out = memfd_create("trace", MFD_CLOEXEC);
	CHECK(out >= 0);
	char page[32];
	snprintf(page, sizeof(page), "%ld", sysconf(_SC_PAGESIZE));
	setenv("SBX_TRACE_RINGBUF_BYTES", page, 1);
	_cleanup_rec_ bpf_rec *rec = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	int r = bpf_rec_start(t.dev, t.ino, out, &rec, &e);
	unsetenv("SBX_TRACE_RINGBUF_BYTES");
	if (r < 0)
		fprintf(stderr, "  %s\n", sbx_err_message(e));
	CHECK(r == 0);
	CHECK(traced_run(&t) == 0);
	bpf_rec_stats stats;
	CHECK(bpf_rec_stop(TAKE_PTR(rec), &stats, &e) == 0);

	stream s = {0};
	_cleanup_free_ uint8_t *data = NULL;
	CHECK(stream_read(out, &s) == 0);
	data = s.data;
	CHECK(stream_valid(&s));
	uint64_t records = 0, lost = 0, lost_recs = 0, getppid = 0;
	FOR_EACH_REC(&s, rr)
	{
		if (rr->type == TR_LOST) {
			lost += ((const struct trace_lost *)rr)->count;
			lost_recs++;
			continue;
		}
		CHECK(rr->pid == 1 && rr->tid == 1);
		records++;
		if (rr->type == TR_SYSCALL && ((const struct trace_syscall *)rr)->nr == SYS_getppid)
			getppid++;
	}
	fprintf(stderr, "  %llu recorded (%llu getppid), %llu lost in %llu TR_LOST records\n",
		(unsigned long long)records, (unsigned long long)getppid, (unsigned long long)lost,
		(unsigned long long)lost_recs);
	CHECK(lost_recs > 0 && lost > 0);
	CHECK(records == stats.records && lost == stats.lost);
	/* BURST getppid, exit_group, and the TR_EXIT of the process */
	CHECK(records + lost == BURST + 2);
}

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *de; (de = readdir(d));)
		n += de->d_name[0] != '.';
	closedir(d);
	return n;
}

/* A supervisor records many commands: start/stop must give back every fd,
 * thread and BPF link, also when start fails. */
TEST(start_stop_leaks_nothing)
{
	SKIP_UNLESS_AVAILABLE();
	_cleanup_close_ int out = memfd_create("trace", MFD_CLOEXEC);
	CHECK(out >= 0);
	/* warm up: libbpf and libc allocate some things once */
	_cleanup_rec_ bpf_rec *rec = NULL;
	int before = count_dir("/proc/self/task");
	CHECK(bpf_rec_start(0, 0, out, &rec, NULL) == 0);
	CHECK(bpf_rec_stop(TAKE_PTR(rec), NULL, NULL) == 0);
	/* The warm-up's thread may still be listed for a moment (see below):
	 * the baseline is taken once it is gone. */
	for (int i = 0; i < 500 && count_dir("/proc/self/task") > before; i++)
		usleep(10 * 1000);
	int fds = count_dir("/proc/self/fd"), tasks = count_dir("/proc/self/task");
	for (int i = 0; i < 5; i++) {
		bpf_rec_stats stats;
		CHECK(ftruncate(out, 0) == 0 && lseek(out, 0, SEEK_SET) == 0);
		/* dev 0 matches no namespace: nothing is recorded */
		CHECK(bpf_rec_start(0, 0, out, &rec, NULL) == 0);
		CHECK(bpf_rec_stop(TAKE_PTR(rec), &stats, NULL) == 0);
		CHECK(stats.records == 0 && stats.lost == 0 &&
		      stats.bytes == sizeof(struct trace_file_header));
	}
	/* failures on the way: a bad knob, a bad fd */
	_cleanup_err_ sbx_err *e = NULL;
	setenv("SBX_TRACE_RINGBUF_BYTES", "12345", 1);
	int r = bpf_rec_start(0, 0, out, &rec, &e);
	unsetenv("SBX_TRACE_RINGBUF_BYTES");
	CHECK(r < 0 && sbx_err_code(e) == SBX_E_INVALID_ARGUMENT);
	sbx_err_free(e);
	e = NULL;
	CHECK(bpf_rec_start(0, 0, -1, &rec, &e) < 0);
	sbx_err_free(e);
	e = NULL;
	/* a write failure: the header cannot be written to a read-only fd */
	int ro = open("/dev/null", O_RDONLY | O_CLOEXEC);
	r = bpf_rec_start(0, 0, ro, &rec, &e);
	safe_close(ro);
	CHECK(r < 0);
	/* a stopped recorder is detached after a while: fewer fds then, never more */
	CHECK(count_dir("/proc/self/fd") <= fds);
	/* pthread_join returns when the kernel clears the thread's tid, which
	 * is before the exiting thread leaves /proc/self/task: on a loaded
	 * machine it is still listed for a moment. A leaked thread stays. */
	for (int i = 0; i < 500 && count_dir("/proc/self/task") > tasks; i++)
		usleep(10 * 1000);
	CHECK(count_dir("/proc/self/task") == tasks);
}

/* How many fds of this process link to `what` (anon_inode:bpf-prog, ...). */
static int held_fds(const char *what)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	for (struct dirent *de; (de = readdir(d));) {
		char p[300], l[64] = "";
		snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
		n += readlink(p, l, sizeof(l) - 1) > 0 && strcmp(l, what) == 0;
	}
	closedir(d);
	return n;
}

/* The ids of the BPF programs this process holds (fds of anon_inode:bpf-prog),
 * as a sum, and how many there are. */
static int held_progs(uint64_t *id_sum)
{
	DIR *d = opendir("/proc/self/fd");
	if (!d)
		return -1;
	int n = 0;
	*id_sum = 0;
	for (struct dirent *de; (de = readdir(d));) {
		char p[300], l[64] = "";
		snprintf(p, sizeof(p), "/proc/self/fd/%s", de->d_name);
		if (readlink(p, l, sizeof(l) - 1) < 0 || strcmp(l, "anon_inode:bpf-prog") != 0)
			continue;
		snprintf(p, sizeof(p), "/proc/self/fdinfo/%s", de->d_name);
		FILE *f = fopen(p, "re");
		char line[128];
		while (f && fgets(line, sizeof(line), f)) {
			unsigned long long id;
			if (sscanf(line, "prog_id: %llu", &id) == 1)
				*id_sum += id, n++;
		}
		if (f)
			fclose(f);
	}
	closedir(d);
	return n;
}

static int phase2[2] = {-1, -1};

/* getpid, tell, block until phase2 says go, getppid, exit. */
static int two_phases(int data_fd)
{
	char c;
	syscall(SYS_getpid);
	if (write(data_fd, "1", 1) != 1)
		return 10;
	if (read(phase2[0], &c, 1) != 1)
		return 11;
	syscall(SYS_getppid);
	return 0;
}

static bool blocked_in_read(pid_t pid)
{
	char path[64], want[16], buf[128] = "";
	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	snprintf(want, sizeof(want), "%d ", (int)SYS_read);
	for (int i = 0; i < 5000; i++) {
		FILE *f = fopen(path, "re");
		if (f) {
			(void)!fgets(buf, sizeof(buf), f);
			fclose(f);
		}
		if (startswith(buf, want))
			return true;
		usleep(1000);
	}
	return false;
}

/* Recording is switched on and off, not loaded per command: after a stop the
 * programs stay loaded, the next recording of the namespace uses the same
 * ones, and nothing of the first recording shows in the second, not even the
 * syscall a task was blocked in across the switch (entered in the first). */
TEST(recorder_is_loaded_once_and_recordings_stay_apart)
{
	SKIP_UNLESS_AVAILABLE();
	CHECK(pipe2(phase2, O_CLOEXEC) == 0);
	_cleanup_close_ int p2r = phase2[0], p2w = phase2[1];
	_cleanup_traced_ traced t = {.go_fd = -1, .out_fd = -1};
	CHECK(traced_spawn(&t, "two_phases") == 0);
	close(TAKE_FD(p2r));
	_cleanup_close_ int out1 = memfd_create("trace1", MFD_CLOEXEC),
			    out2 = memfd_create("trace2", MFD_CLOEXEC);
	CHECK(out1 >= 0 && out2 >= 0);

	_cleanup_rec_ bpf_rec *rec = NULL;
	CHECK(bpf_rec_start(t.dev, t.ino, out1, &rec, NULL) == 0);
	uint64_t ids1 = 0, ids2 = 0;
	int n1 = held_progs(&ids1);
	CHECK(n1 >= 5);
	char c;
	CHECK(write(t.go_fd, "g", 1) == 1);
	CHECK(read(t.out_fd, &c, 1) == 1);
	CHECK(blocked_in_read(t.pid));
	bpf_rec_stats st1, st2;
	CHECK(bpf_rec_stop(TAKE_PTR(rec), &st1, NULL) == 0);
	/* still loaded, and the same programs serve the next recording */
	CHECK(held_progs(&ids2) == n1 && ids2 == ids1);
	CHECK(bpf_rec_start(t.dev, t.ino, out2, &rec, NULL) == 0);
	CHECK(held_progs(&ids2) == n1 && ids2 == ids1);
	CHECK(write(p2w, "2", 1) == 1);
	/* not traced_run: the go pipe was read already, and once the process
	 * has exited a write to it is a SIGPIPE */
	int wst;
	CHECK(RETRY_EINTR(waitpid(t.outer, &wst, 0)) == t.outer);
	t.outer = 0;
	CHECK(WIFEXITED(wst) && WEXITSTATUS(wst) == 0);
	CHECK(bpf_rec_stop(TAKE_PTR(rec), &st2, NULL) == 0);

	stream s1 = {0}, s2 = {0};
	_cleanup_free_ uint8_t *d1 = NULL, *d2 = NULL;
	CHECK(stream_read(out1, &s1) == 0 && stream_read(out2, &s2) == 0);
	d1 = s1.data;
	d2 = s2.data;
	CHECK(stream_valid(&s1) && stream_valid(&s2));
	CHECK(st1.lost == 0 && st2.lost == 0);
	CHECK(find_syscall(&s1, 1, SYS_getpid) && !find_syscall(&s1, 1, SYS_getppid));
	CHECK(!find_syscall(&s2, 1, SYS_getpid) && find_syscall(&s2, 1, SYS_getppid));
	/* the read of phase2 began in the first recording: in neither */
	CHECK(!find_syscall(&s2, 1, SYS_read));
	const struct trace_syscall *g = find_syscall(&s2, 1, SYS_getppid);
	CHECK(g->h.pid == 1 && (g->h.flags & TRS_HAS_RET) &&
	      g->enter_ns >= ((const struct trace_file_header *)d2)->start_ns);
	CHECK(find_syscall(&s2, 1, SYS_exit_group) && find_rec(&s2, TR_EXIT, 1));

	/* Stopped, the programs stay attached for a while (the next recording
	 * starts at once), then are detached but stay loaded; a start attaches
	 * them again. */
	CHECK(held_fds("anon_inode:bpf_link") == 5);
	for (int i = 0; i < 100 && held_fds("anon_inode:bpf_link") > 0; i++)
		usleep(50 * 1000);
	CHECK(held_fds("anon_inode:bpf_link") == 0);
	CHECK(held_progs(&ids2) == n1 && ids2 == ids1);
	CHECK(ftruncate(out2, 0) == 0 && lseek(out2, 0, SEEK_SET) == 0);
	CHECK(bpf_rec_start(t.dev, t.ino, out2, &rec, NULL) == 0);
	CHECK(held_fds("anon_inode:bpf_link") == 5 && held_progs(&ids2) == n1 && ids2 == ids1);
	CHECK(bpf_rec_stop(TAKE_PTR(rec), &st2, NULL) == 0);
	CHECK(st2.lost == 0);
}

/* The exec'd child of traced_spawn: unshares its pid namespace, forks the
 * traced process (pid 1 there), tells the test its pid, and exits with its
 * status. The traced process waits for the go pipe, then runs its scenario. */
__attribute__((constructor)) static void traced_child_main(void)
{
	const char *name = getenv(CHILD_ENV);
	if (!name)
		return;
	static const struct {
		const char *name;
		int (*fn)(int data_fd);
	} fns[] = {{"scenario", scenario},
		   {"thread_exec", thread_exec},
		   {"burst", burst},
		   {"two_phases", two_phases}};
	int (*fn)(int) = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(fns); i++)
		if (strcmp(fns[i].name, name) == 0)
			fn = fns[i].fn;
	if (!fn || unshare(CLONE_NEWPID) < 0)
		_exit(120);
	pid_t p = fork();
	if (p < 0)
		_exit(121);
	if (p == 0) {
		char c;
		close(CHILD_ID_FD);
		phase2[0] = fcntl(CHILD_PHASE2_FD, F_GETFD) == 0 ? CHILD_PHASE2_FD : -1;
		if (read(CHILD_GO_FD, &c, 1) != 1)
			_exit(122);
		_exit(fn(CHILD_DATA_FD));
	}
	close(CHILD_GO_FD);
	close(CHILD_DATA_FD);
	close(CHILD_PHASE2_FD);
	(void)!write(CHILD_ID_FD, &p, sizeof(p));
	close(CHILD_ID_FD);
	int st;
	if (waitpid(p, &st, 0) < 0)
		_exit(123);
	_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 124);
}
