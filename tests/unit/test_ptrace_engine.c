/* The ptrace engine: its pure pieces (virtual clock, file-time mapping,
 * ChaCha20 streams, vDSO parsing, the seccomp program run through a small
 * BPF interpreter) and whole runs of build/helpers/detprobe, python3 and make
 * under determinism and recording. Each run forks: ptrace_engine_run forks
 * the command itself and must be the only user of waitpid(-1) in its
 * process. Runs that compare pids use a fresh pid namespace with its own
 * /proc (as inside sbx), when this process may create one. */
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <grp.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "trace/determ_tsc.h"
#include "trace/ptrace_engine.h"
#include "trace/trace_read.h"
#include "trace/vdso.h"
#include "runtime/caps.h"
#include "runtime/landlock.h"
#include "runtime/seccomp.h"
#include "unit.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/macro.h"

#define EPOCH 1700000000000000000ULL /* 2023-11-14 22:13:20 UTC */

/* ---- pure pieces ---- */

TEST(chacha20_rfc8439_vector)
{
	/* RFC 8439 2.3.2: key 00..1f, counter 1, nonce 00:00:00:09:00:00:00:4a:00:00:00:00 */
	uint32_t key[8];
	uint8_t kb[32], out[64];
	for (int i = 0; i < 32; i++)
		kb[i] = (uint8_t)i;
	memcpy(key, kb, 32);
	determ_chacha20_block(key, 1 | (0x09000000ULL << 32), 0x4a000000ULL, out);
	static const uint8_t want[16] = {0x10, 0xf1, 0xe7, 0xe4, 0xd1, 0x3b, 0x59, 0x15,
					 0x50, 0x0f, 0xdd, 0x1f, 0xa3, 0x20, 0x71, 0xc4};
	CHECK(memcmp(out, want, 16) == 0);
	CHECK(out[60] == 0xa2 && out[61] == 0x50 && out[62] == 0x3c && out[63] == 0x4e);
}

TEST(rng_streams_by_position)
{
	determ_rng a, b;
	determ_rng_init(&a, 42);
	determ_rng_init(&b, 43);
	uint8_t whole[300], parts[300], other[300];
	determ_rng_read(&a, 5, 0, whole, sizeof(whole));
	/* Same bytes however the reads are cut: a stream is addressed by position. */
	determ_rng_read(&a, 5, 0, parts, 1);
	determ_rng_read(&a, 5, 1, parts + 1, 63);
	determ_rng_read(&a, 5, 64, parts + 64, 100);
	determ_rng_read(&a, 5, 164, parts + 164, 136);
	CHECK(memcmp(whole, parts, sizeof(whole)) == 0);
	determ_rng_read(&b, 5, 0, other, sizeof(other));
	CHECK(memcmp(whole, other, 32) != 0); /* another seed */
	determ_rng_read(&a, 6, 0, other, sizeof(other));
	CHECK(memcmp(whole, other, 32) != 0); /* another stream */
}

TEST(virtual_clock)
{
	determ_clock c = {.epoch_ns = EPOCH};
	CHECK(determ_clock_kind(CLOCK_REALTIME) == DETERM_CLK_REAL);
	CHECK(determ_clock_kind(CLOCK_REALTIME_COARSE) == DETERM_CLK_REAL);
	CHECK(determ_clock_kind(CLOCK_TAI) == DETERM_CLK_REAL);
	CHECK(determ_clock_kind(CLOCK_MONOTONIC) == DETERM_CLK_MONO);
	CHECK(determ_clock_kind(CLOCK_MONOTONIC_RAW) == DETERM_CLK_MONO);
	CHECK(determ_clock_kind(CLOCK_BOOTTIME) == DETERM_CLK_MONO);
	CHECK(determ_clock_kind(CLOCK_PROCESS_CPUTIME_ID) == DETERM_CLK_CPU);
	CHECK(determ_clock_kind(CLOCK_THREAD_CPUTIME_ID) == DETERM_CLK_CPU);
	CHECK(determ_clock_kind(10) == DETERM_CLK_NONE);
	CHECK(determ_clock_kind(12) == DETERM_CLK_NONE);
	CHECK(determ_clock_kind((int64_t)(~(uint64_t)1234 << 3) | 2) ==
	      DETERM_CLK_CPU); /* another pid's sched clock */
	CHECK(determ_clock_kind((int32_t)((~3u << 3) | 3)) == DETERM_CLK_NONE); /* fd 3 (PTP) */
	CHECK(determ_clock_kind(0x100000000LL) == DETERM_CLK_REAL); /* only the low 32 bits count */
	uint64_t r1 = determ_clock_read(&c, DETERM_CLK_REAL), r2 = determ_clock_read(&c, DETERM_CLK_REAL);
	CHECK(r1 == EPOCH + DETERM_TICK_NS && r2 == r1 + DETERM_TICK_NS);
	CHECK(determ_clock_read(&c, DETERM_CLK_MONO) == DETERM_MONO_BASE_NS + 3 * DETERM_TICK_NS);
	CHECK(determ_clock_peek(&c, DETERM_CLK_CPU) == 3 * DETERM_TICK_NS);
	CHECK(determ_clock_tsc(&c) == DETERM_MONO_BASE_NS + 4 * DETERM_TICK_NS);
	determ_clock_advance_to(&c, DETERM_CLK_MONO, DETERM_MONO_BASE_NS + 1000000000ULL);
	CHECK(determ_clock_peek(&c, DETERM_CLK_REAL) == EPOCH + 1000000000ULL);
	determ_clock_advance_to(&c, DETERM_CLK_REAL, EPOCH); /* the past: no-op */
	CHECK(c.vt == 1000000000ULL);
	CHECK(determ_clock_res(CLOCK_MONOTONIC) == 1 && determ_clock_res(CLOCK_REALTIME_COARSE) == 4000000);
	struct rusage ru;
	memset(&ru, 0xff, sizeof(ru));
	determ_rusage(&ru, 2345678999ULL);
	CHECK(ru.ru_utime.tv_sec == 2 && ru.ru_utime.tv_usec == 345678);
	CHECK(ru.ru_stime.tv_sec == 0 && ru.ru_stime.tv_usec == 0 && ru.ru_maxrss == 0 && ru.ru_minflt == 0 &&
	      ru.ru_nvcsw == 0 && ru.ru_nivcsw == 0);
}

TEST(tsc_instruction_decode)
{
	bool p;
	CHECK(determ_tsc_insn((const uint8_t[]){0x0f, 0x31, 0x90}, 3, &p) == 2 && !p);
	CHECK(determ_tsc_insn((const uint8_t[]){0x0f, 0x01, 0xf9}, 3, &p) == 3 && p);
	CHECK(determ_tsc_insn((const uint8_t[]){0x0f, 0x01, 0xf8}, 3, &p) == 0); /* swapgs */
	CHECK(determ_tsc_insn((const uint8_t[]){0x0f, 0x01}, 2, &p) == 0);
	CHECK(determ_tsc_insn((const uint8_t[]){0x0f}, 1, &p) == 0);
}

TEST(file_time_mapping)
{
	int64_t start = (int64_t)(EPOCH + 3600000000000ULL); /* the real start is an hour after the epoch */
	determ_clock c = {.epoch_ns = EPOCH};
	determ_timemap m = {.real_start = start};
	bool ch;
	/* Old files keep their times. */
	int64_t old = (int64_t)EPOCH - 2 * DETERM_SQUEEZE_NS;
	CHECK(determ_time_map(&m, &c, 1, 2, old, &ch) == old && !ch);
	/* Files from between epoch-1d and the start would be in the virtual future: squeezed below the
	 * epoch, keeping their order (make's decisions) and independent of the real start. */
	int64_t a = start - 5000000000LL, b = start - 4000000000LL;
	int64_t va = determ_time_map(&m, &c, 1, 3, a, &ch), vb = determ_time_map(&m, &c, 1, 4, b, &ch);
	CHECK(ch && va < vb && vb < (int64_t)EPOCH && va > (int64_t)EPOCH - DETERM_SQUEEZE_NS);
	CHECK(va == determ_time_squeeze(a, (int64_t)EPOCH));
	CHECK(determ_time_squeeze(INT64_MAX, (int64_t)EPOCH) <= (int64_t)EPOCH);
	CHECK(c.vt == 0);
	/* Times of this run: the observer's clock when first seen, then stable;
	 * seeing a new time does not move the clock (whether a real time is new
	 * is timing). */
	(void)determ_clock_read(&c, DETERM_CLK_REAL);
	int64_t n1 = determ_time_map(&m, &c, 1, 5, start + 10, &ch);
	CHECK(ch && n1 == (int64_t)(EPOCH + DETERM_TICK_NS) && c.vt == DETERM_TICK_NS);
	(void)determ_clock_read(&c, DETERM_CLK_REAL);
	int64_t n2 = determ_time_map(&m, &c, 1, 6, start + 5, &ch); /* seen later: later, though older */
	CHECK(n2 == n1 + (int64_t)DETERM_TICK_NS);
	CHECK(determ_time_map(&m, &c, 1, 5, start + 10, &ch) == n1);
	(void)determ_clock_read(&c, DETERM_CLK_REAL);
	CHECK(determ_time_map(&m, &c, 2, 5, start + 10, &ch) != n1); /* another device */
	for (int i = 0; i < 5000; i++)				     /* growth keeps every entry */
		(void)determ_time_map(&m, &c, 9, (uint64_t)i, start + i, &ch);
	CHECK(determ_time_map(&m, &c, 1, 5, start + 10, &ch) == n1);
	CHECK(m.n == 5003);
	/* The new times of one stat result share one virtual time. */
	int64_t set[3] = {start + 100, start + 200, start + 100};
	uint64_t vt = c.vt;
	CHECK(determ_time_map_set(&m, &c, 3, 1, NULL, set, 3) == 3);
	CHECK(set[0] == set[1] && set[1] == set[2] && set[0] == (int64_t)(EPOCH + vt) && c.vt == vt);
	/* The same real time with another version (the file changed size within
	 * one kernel tick): a change, seen at the clock's time now, as it would
	 * be had the tick passed. */
	int64_t w1[1] = {start + 300}, w2[1] = {start + 300}, w3[1] = {start + 300};
	uint64_t v1[1] = {10}, v2[1] = {11};
	CHECK(determ_time_map_set(&m, &c, 3, 2, v1, w1, 1) == 1);
	(void)determ_clock_read(&c, DETERM_CLK_REAL);
	CHECK(determ_time_map_set(&m, &c, 3, 2, v2, w2, 1) == 1 && w2[0] == w1[0] + (int64_t)DETERM_TICK_NS);
	CHECK(determ_time_map_set(&m, &c, 3, 2, v1, w3, 1) == 1 && w3[0] == w1[0]);
	determ_timemap_free(&m);
	/* An epoch well after the real start: earlier times stay. */
	determ_clock f = {.epoch_ns = (uint64_t)start + 2 * DETERM_EPOCH_SLACK_NS};
	determ_timemap m2 = {.real_start = start};
	CHECK(determ_time_map(&m2, &f, 1, 2, start - 1, &ch) == start - 1 && !ch);
	determ_timemap_free(&m2);
	/* An epoch a few ms after it, as a recording's "now" can be (its replays,
	 * later, have it before): squeezed like theirs, whichever side it fell on. */
	determ_clock g = {.epoch_ns = (uint64_t)start + 3000000};
	determ_timemap m3 = {.real_start = start};
	int64_t old_file = start - 300000000; /* written 0.3 s before the run */
	CHECK(determ_time_map(&m3, &g, 1, 2, old_file, &ch) ==
		  determ_time_squeeze(old_file, (int64_t)g.epoch_ns) &&
	      ch);
	determ_timemap_free(&m3);
}

TEST(vdso_lookup_own_image)
{
	const uint8_t *base = (const uint8_t *)getauxval(AT_SYSINFO_EHDR);
	if (!base)
		SKIP_OK("no vDSO");
	size_t size = vdso_image_size(base, 64);
	CHECK(size > 64 && size < 65536);
	uint64_t o1, s1, o2, s2;
	CHECK(vdso_lookup(base, size, "__vdso_clock_gettime", &o1, &s1) == 0);
	CHECK(vdso_lookup(base, size, "clock_gettime", &o2, &s2) == 0);
	CHECK(o1 == o2 && o1 > 0 && o1 < size && s1 >= VDSO_STUB_LEN);
	CHECK(vdso_lookup(base, size, "__vdso_time", &o1, &s1) == 0);
	CHECK(vdso_lookup(base, size, "__vdso_getcpu", &o1, &s1) == 0);
	CHECK(vdso_lookup(base, size, "__vdso_nonexistent", &o1, &s1) == -ENOENT);
	/* Truncated and corrupted copies never crash and never point outside. */
	uint8_t *copy = malloc(size);
	CHECK(copy);
	for (size_t n = 0; n < size; n += 7) {
		memcpy(copy, base, n);
		if (vdso_lookup(copy, n, "__vdso_clock_gettime", &o1, &s1) == 0)
			CHECK(o1 < n);
	}
	unsigned seed = 1;
	for (int round = 0; round < 2000; round++) {
		memcpy(copy, base, size);
		for (int k = 0; k < 4; k++) {
			seed = seed * 1103515245 + 12345;
			copy[(seed >> 8) % (round % 2 ? 64 + 0u : size)] ^= (uint8_t)(seed >> 24 | 1);
		}
		if (vdso_lookup(copy, size, "__vdso_gettimeofday", &o1, &s1) == 0)
			CHECK(o1 < size);
	}
	free(copy);
	uint8_t stub[VDSO_STUB_LEN];
	vdso_stub(228, stub);
	CHECK(memcmp(stub, (const uint8_t[]){0xb8, 228, 0, 0, 0, 0x0f, 0x05, 0xc3}, 8) == 0);
}

/* A classic-BPF interpreter for what determ_filter_build emits. */
static uint32_t bpf_run(const struct sock_filter *f, int n, const struct seccomp_data *d)
{
	uint32_t A = 0;
	for (int pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			memcpy(&A, (const uint8_t *)d + i->k, 4);
			break;
		case BPF_ALU | BPF_AND | BPF_K:
			A &= i->k;
			break;
		case BPF_JMP | BPF_JA:
			pc += (int)i->k;
			break;
		case BPF_JMP | BPF_JEQ | BPF_K:
			pc += A == i->k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JGE | BPF_K:
			pc += A >= i->k ? i->jt : i->jf;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			pc += (A & i->k) ? i->jt : i->jf;
			break;
		case BPF_RET | BPF_K:
			return i->k;
		default:
			return 0xdead;
		}
	}
	return 0xbad;
}

static uint32_t verdict(const struct sock_filter *f, int n, int nr, uint64_t a1, uint64_t a3)
{
	struct seccomp_data d = {.nr = nr, .arch = AUDIT_ARCH_X86_64, .args = {0, a1, 0, a3}};
	return bpf_run(f, n, &d) & SECCOMP_RET_ACTION_FULL;
}

TEST(seccomp_program)
{
	struct sock_filter f[DETERM_FILTER_MAX];
	CHECK(determ_filter_build(f, 10, DETERM_FILTER_UNAME) < 0);
	int n = determ_filter_build(f, DETERM_FILTER_MAX, DETERM_FILTER_UNAME | DETERM_FILTER_INODES);
	CHECK(n > 0);
	CHECK(verdict(f, n, SYS_clock_gettime, 0, 0) == SECCOMP_RET_USER_NOTIF);
	CHECK(verdict(f, n, SYS_getrandom, 0, 0) == SECCOMP_RET_USER_NOTIF);
	CHECK(verdict(f, n, SYS_sysinfo, 0, 0) == SECCOMP_RET_USER_NOTIF);
	CHECK(verdict(f, n, SYS_getrusage, 0, 0) == SECCOMP_RET_USER_NOTIF);
	CHECK(verdict(f, n, SYS_clock_nanosleep, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_newfstatat, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_uname, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_wait4, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_waitid, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_openat, 0, 0) == SECCOMP_RET_USER_NOTIF);
	CHECK(verdict(f, n, SYS_read, 0, 0) == SECCOMP_RET_ALLOW);
	CHECK(verdict(f, n, SYS_getdents64, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_getdents, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_unlinkat, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_renameat2, 0, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_rseq, 0, 0) == SECCOMP_RET_ERRNO);
	/* futex: only waits with an absolute timeout */
	CHECK(verdict(f, n, SYS_futex, 0 /* WAIT */, 0x1000) == SECCOMP_RET_ALLOW);
	CHECK(verdict(f, n, SYS_futex, 9 | 128, 0) == SECCOMP_RET_ALLOW);
	CHECK(verdict(f, n, SYS_futex, 9 | 128, 0x1000) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_futex, 9 | 128 | 256, 0x100000000ULL) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_futex, 1 /* WAKE */, 0x1000) == SECCOMP_RET_ALLOW);
	CHECK(verdict(f, n, SYS_timerfd_settime, 1, 0) == SECCOMP_RET_TRACE);
	CHECK(verdict(f, n, SYS_timerfd_settime, 0, 0) == SECCOMP_RET_ALLOW);
	CHECK(verdict(f, n, 0x40000000 | SYS_clock_gettime, 0, 0) == SECCOMP_RET_ALLOW); /* x32: sbx kills */
	struct seccomp_data i386 = {.nr = 13, .arch = AUDIT_ARCH_I386};
	CHECK(bpf_run(f, n, &i386) == SECCOMP_RET_ALLOW);
	n = determ_filter_build(f, DETERM_FILTER_MAX, 0);
	CHECK(verdict(f, n, SYS_uname, 0, 0) == SECCOMP_RET_ALLOW);
	CHECK(verdict(f, n, SYS_getdents64, 0, 0) == SECCOMP_RET_ALLOW);
}

/* ---- whole runs ---- */

extern char **environ;

typedef struct run {
	int rc;	       /* ptrace_engine_run_ex's return */
	sbx_code code; /* its error, when rc < 0 */
	char msg[512];
	ptrace_result res;
	char *out; /* the command's stdout and stderr */
	size_t out_len;
	uint8_t *rec; /* the record stream */
	size_t rec_len;
	double secs;
} run;

typedef struct run_cfg {
	const char *cwd;
	bool pidns;	/* in a fresh pid namespace with its own /proc (pids comparable) */
	uid_t uid;	/* nonzero: drop to this uid/gid (no capabilities) first */
	bool no_record; /* pass record_fd -1 */
	bool walls;	/* behind sbx's walls first: no_new_privs, capabilities dropped, Landlock, seccomp,
			   not dumpable (as init and its fork for the engine are) */
	const char *exec_dir; /* with walls: a directory to allow reading and executing */
	int pre_forks;	      /* fork and reap this many children first (pids used before the command) */
	bool quiet;	      /* an engine error is expected: do not print it */
} run_cfg;

typedef struct run_msg {
	int rc;
	sbx_code code;
	char msg[512];
	ptrace_result res;
} run_msg;

static void run_free(run *r)
{
	free(r->out);
	free(r->rec);
	memset(r, 0, sizeof(*r));
}

static char *slurp(int fd, size_t *len)
{
	off_t n = lseek(fd, 0, SEEK_END);
	char *b = malloc((size_t)(n > 0 ? n : 0) + 1);
	if (!b)
		return NULL;
	ssize_t got = n > 0 ? pread(fd, b, (size_t)n, 0) : 0;
	b[got > 0 ? got : 0] = 0;
	*len = got > 0 ? (size_t)got : 0;
	return b;
}

static int write_file(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t w = write(fd, s, strlen(s));
	close(fd);
	return w == (ssize_t)strlen(s) ? 0 : -1;
}

/* In the child: a new pid namespace whose init runs the rest; returns in that init. */
static int enter_pidns(void)
{
	uid_t uid = geteuid();
	gid_t gid = getegid();
	int flags = CLONE_NEWPID | CLONE_NEWNS | (uid != 0 ? CLONE_NEWUSER : 0);
	if (unshare(flags) < 0)
		return -1;
	if (uid != 0) {
		char m[64];
		snprintf(m, sizeof(m), "0 %d 1\n", (int)uid);
		if (write_file("/proc/self/setgroups", "deny") < 0 || write_file("/proc/self/uid_map", m) < 0)
			return -1;
		snprintf(m, sizeof(m), "0 %d 1\n", (int)gid);
		if (write_file("/proc/self/gid_map", m) < 0)
			return -1;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		return -1;
	pid_t p = fork();
	if (p < 0)
		return -1;
	if (p > 0) {
		int st = 0;
		while (waitpid(p, &st, 0) < 0 && errno == EINTR)
			;
		_exit(WIFEXITED(st) ? WEXITSTATUS(st) : 99);
	}
	if (mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		_exit(98);
	return 0;
}

/* The restrictions sbx's setup.c puts on init before it forks the engine. */
static int sandbox_walls(const run_cfg *cfg, char *msg, size_t n)
{
	sbx_err *e = NULL;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return snprintf(msg, n, "no_new_privs: %s", strerror(errno)), -1;
	if (geteuid() == 0 && caps_drop(&e) < 0)
		goto fail;
	const landlock_rule rules[] = {
	    {"/usr", LL_READ | LL_EXEC},
	    {"/bin", LL_READ | LL_EXEC},
	    {"/lib", LL_READ | LL_EXEC},
	    {"/lib64", LL_READ | LL_EXEC},
	    {"/etc", LL_READ},
	    {"/proc", LL_READ},
	    {"/dev", LL_READ | LL_WRITE | LL_DEV},
	    {"/tmp", LL_READ | LL_EXEC | LL_WRITE},
	    {cfg->exec_dir ? cfg->exec_dir : "/usr", LL_READ | LL_EXEC},
	};
	if (landlock_restrict(rules, ARRAY_SIZE(rules), &e) < 0 || seccomp_apply(&e) < 0)
		goto fail;
	(void)prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	return 0;
fail:
	snprintf(msg, n, "walls: %s", sbx_err_message(e));
	sbx_err_free(e);
	return -1;
}

static bool run_cmd(const ptrace_opts *o, char **argv, const run_cfg *cfg, run *r)
{
	memset(r, 0, sizeof(*r));
	int out = memfd_create("out", MFD_CLOEXEC), rec = memfd_create("rec", MFD_CLOEXEC), resp[2];
	if (out < 0 || rec < 0 || pipe2(resp, O_CLOEXEC) < 0)
		return false;
	struct timespec t0, t1;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid_t pid = fork();
	if (pid == 0) {
		close(resp[0]);
		run_msg m = {.rc = -1, .code = SBX_E_INTERNAL};
		if (cfg->uid && (setgroups(0, NULL) < 0 || setresgid(cfg->uid, cfg->uid, cfg->uid) < 0 ||
				 setresuid(cfg->uid, cfg->uid, cfg->uid) < 0)) {
			snprintf(m.msg, sizeof(m.msg), "drop to uid %d: %s", (int)cfg->uid, strerror(errno));
			(void)!write(resp[1], &m, sizeof(m));
			_exit(1);
		}
		if (cfg->pidns && enter_pidns() < 0) {
			snprintf(m.msg, sizeof(m.msg), "pidns: %s", strerror(errno));
			m.code = SBX_E_UNAVAILABLE;
			(void)!write(resp[1], &m, sizeof(m));
			_exit(1);
		}
		for (int i = 0; i < cfg->pre_forks; i++) {
			pid_t c = fork();
			if (c == 0)
				_exit(0);
			if (c > 0)
				waitpid(c, NULL, 0);
		}
		if (cfg->walls && sandbox_walls(cfg, m.msg, sizeof(m.msg)) < 0) {
			(void)!write(resp[1], &m, sizeof(m));
			_exit(1);
		}
		if (dup2(out, 1) < 0 || dup2(out, 2) < 0 || (cfg->cwd && chdir(cfg->cwd) < 0))
			_exit(1);
		/* Nothing else open, as in init's child: whatever the test runner
		 * inherited must not be mistaken for a leak of the engine. */
		int lo = rec < resp[1] ? rec : resp[1], hi = rec < resp[1] ? resp[1] : rec;
		if (lo > 3)
			syscall(SYS_close_range, 3, lo - 1, 0);
		if (hi > lo + 1)
			syscall(SYS_close_range, lo + 1, hi - 1, 0);
		syscall(SYS_close_range, hi + 1, ~0U, 0);
		ptrace_opts o2 = *o;
		o2.record_fd = cfg->no_record ? -1 : rec;
		sbx_err *e = NULL;
		m.rc = ptrace_engine_run_ex(&o2, argv, environ, &m.res, &e);
		if (m.rc < 0) {
			m.code = sbx_err_code(e);
			snprintf(m.msg, sizeof(m.msg), "%s", sbx_err_message(e));
		}
		(void)!write(resp[1], &m, sizeof(m));
		_exit(0);
	}
	close(resp[1]);
	run_msg m;
	ssize_t n = read(resp[0], &m, sizeof(m));
	close(resp[0]);
	int st;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	r->secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	if (n != (ssize_t)sizeof(m)) {
		snprintf(r->msg, sizeof(r->msg), "the test child died (status %#x)", st);
		r->rc = -1;
	} else {
		r->rc = m.rc;
		r->code = m.code;
		memcpy(r->msg, m.msg, sizeof(r->msg));
		r->res = m.res;
	}
	r->out = slurp(out, &r->out_len);
	r->rec = (uint8_t *)slurp(rec, &r->rec_len);
	close(out);
	close(rec);
	if (r->rc < 0 && !cfg->quiet)
		fprintf(stderr, "  run %s: %s\n", argv[0], r->msg);
	return r->rc == 0;
}

static const char *helper(const char *name)
{
	static char path[4096];
	const char *dir = getenv("SBX_HELPERS");
	char rel[1024];
	snprintf(rel, sizeof(rel), "%s/%s", dir ? dir : "build/helpers", name);
	/* absolute: the runs chdir to the scratch directory */
	return realpath(rel, path) && access(path, X_OK) == 0 ? path : NULL;
}

/* The value after "name " in detprobe's output, as a new string. */
static char *field(const char *out, const char *name)
{
	size_t nl = strlen(name);
	for (const char *p = out; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
		if (strncmp(p, name, nl) == 0 && p[nl] == ' ') {
			const char *v = p + nl + 1, *end = strchr(v, '\n');
			return strndup(v, end ? (size_t)(end - v) : strlen(v));
		}
	return NULL;
}

static bool field_is(const char *out, const char *name, const char *want)
{
	char *v = field(out, name);
	bool ok = v && strcmp(v, want) == 0;
	if (!ok)
		fprintf(stderr, "  %s: got '%s', want '%s'\n", name, v ? v : "(none)", want);
	free(v);
	return ok;
}

static bool field_differs(const char *a, const char *b, const char *name)
{
	char *x = field(a, name), *y = field(b, name);
	bool d = x && y && strcmp(x, y) != 0;
	free(x);
	free(y);
	return d;
}

static char tmpdir[64];
static pid_t tmpdir_owner;

static const char *scratch_dir(void)
{
	if (!tmpdir[0]) {
		snprintf(tmpdir, sizeof(tmpdir), "/tmp/sbx-ptrace-test-XXXXXX");
		if (!mkdtemp(tmpdir))
			return NULL;
		chmod(tmpdir, 0777); /* the rootless runs write here too */
		tmpdir_owner = getpid();
	}
	return tmpdir;
}

/* Copies an executable (mode 0755) for a run as another user. */
static bool copy_exe(const char *from, const char *to)
{
	_cleanup_close_ int in = open(from, O_RDONLY | O_CLOEXEC);
	_cleanup_close_ int out = open(to, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0755);
	if (in < 0 || out < 0)
		return false;
	char buf[65536];
	ssize_t n;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(out, buf, (size_t)n) != n)
			return false;
	return n == 0 && fchmod(out, 0755) == 0;
}

__attribute__((destructor)) static void scratch_cleanup(void)
{
	if (tmpdir[0] && getpid() == tmpdir_owner) {
		char cmd[128];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		(void)!system(cmd);
	}
}

static ptrace_opts det_opts(uint64_t seed)
{
	ptrace_opts o = PTRACE_OPTS_INIT;
	o.deterministic = true;
	o.epoch_ns = EPOCH;
	o.seed = seed;
	o.hostname = "detbox";
	return o;
}

/* Whether this process can make a pid namespace with its own /proc. */
static bool can_pidns(void)
{
	static int cached = -1;
	if (cached < 0) {
		pid_t p = fork();
		if (p == 0)
			_exit(enter_pidns() < 0 ? 1 : 0);
		int st = 1;
		waitpid(p, &st, 0);
		cached = WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	return cached;
}

/* The output without its rdtsc/rdtscp lines where this machine does not trap
 * rdtsc (determ_tsc.h): the engine cannot answer it there, and says so in
 * the trace (determinism.rdtsc_trapped). */
static char *comparable(const char *out)
{
	char *c = strdup(out ? out : ""), *w = c;
	if (!c || determ_tsc_traps())
		return c;
	for (const char *l = out ? out : ""; *l;) {
		const char *e = strchr(l, '\n');
		size_t n = e ? (size_t)(e - l + 1) : strlen(l);
		if (strncmp(l, "rdtsc", 5) != 0) {
			memmove(w, l, n);
			w += n;
		}
		l += n;
	}
	*w = 0;
	return c;
}

static bool same_output(const run *a, const run *b)
{
	_cleanup_free_ char *ca = comparable(a->out), *cb = comparable(b->out);
	if (ca && cb && strcmp(ca, cb) == 0) {
		if (!determ_tsc_traps())
			fprintf(stderr, "  (rdtsc is not trapped on this machine: its lines not compared)\n");
		return true;
	}
	fprintf(stderr, "  outputs differ:\n--- first\n%s--- second\n%s---\n", a->out, b->out);
	return false;
}

static bool exited_ok(const run *r)
{
	if (r->rc == 0 && WIFEXITED(r->res.status) && WEXITSTATUS(r->res.status) == 0)
		return true;
	fprintf(stderr, "  status %#x, output:\n%s\n", r->res.status, r->out ? r->out : "");
	return false;
}

TEST(det_detprobe_reproducible)
{
	const char *probe = helper("detprobe"), *dir = scratch_dir();
	if (!probe || !dir)
		SKIP("build/helpers/detprobe not built");
	char file[256];
	snprintf(file, sizeof(file), "%s/probe-file", dir);
	char *argv[] = {(char *)probe, file, NULL};
	run_cfg cfg = {.cwd = dir, .pidns = can_pidns()};
	ptrace_opts o = det_opts(1);
	if (cfg.pidns)
		o.first_pid = 100;
	run a, b, c;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	CHECK(run_cmd(&o, argv, &cfg, &b) && exited_ok(&b));
	CHECK(same_output(&a, &b));
	/* What the values are. */
	CHECK(field_is(a.out, "libc_realtime", "1700000000.000001000"));
	CHECK(field_is(a.out, "libc_monotonic", "1000.000002000"));
	CHECK(field_is(a.out, "sys_realtime", "1700000000.000003000"));
	CHECK(field_is(a.out, "nodename", "detbox"));
	CHECK(field_is(a.out, "getcpu", "0 0"));
	CHECK(field_is(a.out, "sched_getcpu", "0"));
	char *aux = field(a.out, "rdtscp");
	CHECK(aux && (!determ_tsc_traps() || strstr(aux, " 0"))); /* the CPU number of rdtscp: 0 */
	free(aux);
	char *mt = field(a.out, "stat_mtime");
	CHECK(mt && strncmp(mt, "1700000000.0000", 15) == 0); /* a file of this run: virtual time */
	free(mt);
	char *sx = field(a.out, "statx_mtime");
	CHECK(sx && field_is(a.out, "stat_mtime", sx));
	free(sx);
	if (cfg.pidns) {
		CHECK(field_is(a.out, "getpid", "100"));
		CHECK(field_is(a.out, "child", "101 7"));
		CHECK(a.res.pid == 100);
	} else
		fprintf(stderr, "  (no pid namespace here: pids not compared with first_pid)\n");
	/* Another seed: other random bytes, same clocks. */
	o.seed = 2;
	CHECK(run_cmd(&o, argv, &cfg, &c) && exited_ok(&c));
	CHECK(field_differs(a.out, c.out, "getrandom"));
	CHECK(field_differs(a.out, c.out, "sys_getrandom"));
	CHECK(field_differs(a.out, c.out, "urandom"));
	CHECK(field_differs(a.out, c.out, "random"));
	CHECK(field_differs(a.out, c.out, "at_random"));
	if (field_differs(a.out, c.out, "libc_realtime_end"))
		fprintf(stderr, "%s\n----\n%s\n", a.out, c.out);
	CHECK(!field_differs(a.out, c.out, "libc_realtime_end"));
	CHECK(a.res.emulated > 10);
	run_free(&a);
	run_free(&b);
	run_free(&c);
}

TEST(nondeterministic_runs_differ)
{
	const char *probe = helper("detprobe"), *dir = scratch_dir();
	if (!probe || !dir)
		SKIP("build/helpers/detprobe not built");
	char file[256];
	snprintf(file, sizeof(file), "%s/probe-nd", dir);
	char *argv[] = {(char *)probe, file, NULL};
	run_cfg cfg = {.cwd = dir};
	ptrace_opts o = PTRACE_OPTS_INIT; /* traced, nothing controlled */
	run a, b;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	CHECK(run_cmd(&o, argv, &cfg, &b) && exited_ok(&b));
	CHECK(field_differs(a.out, b.out, "libc_realtime"));
	CHECK(field_differs(a.out, b.out, "getrandom"));
	CHECK(field_differs(a.out, b.out, "urandom"));
	char *rt = field(a.out, "libc_realtime");
	CHECK(rt && strcmp(rt, "1700000000.000001000") != 0);
	free(rt);
	run_free(&a);
	run_free(&b);
}

/* Walks a stream; calls fn for each record. */
static bool walk(const run *r, void (*fn)(const trace_ev *, void *), void *arg, uint64_t *n)
{
	trace_reader rd;
	sbx_err *e = NULL;
	if (trace_read_init(&rd, r->rec, r->rec_len, &e) < 0) {
		fprintf(stderr, "  stream: %s\n", sbx_err_message(e));
		sbx_err_free(e);
		return false;
	}
	if (rd.hdr.recorder != TRACE_REC_PTRACE || rd.hdr.arch != AUDIT_ARCH_X86_64)
		return false;
	trace_ev ev;
	int k;
	*n = 0;
	while ((k = trace_read_next(&rd, &ev, &e)) > 0) {
		fn(&ev, arg);
		(*n)++;
	}
	if (k < 0) {
		fprintf(stderr, "  stream: %s\n", sbx_err_message(e));
		sbx_err_free(e);
		return false;
	}
	return true;
}

typedef struct seen {
	const char *file, *probe;
	pid_t main;
	int exec, open_file, open_urandom, write_x, forks, main_exit, clock_emulated, syscalls;
	int determ[8];
	int64_t open_file_ret;
} seen;

static void note(const trace_ev *ev, void *arg)
{
	seen *s = arg;
	if (ev->type == TR_EXEC && ev->exec.filename && strcmp(ev->exec.filename, s->probe) == 0)
		s->exec++;
	if (ev->type == TR_FORK && ev->fork.parent_pid == (uint32_t)s->main)
		s->forks++;
	if (ev->type == TR_EXIT && ev->pid == (uint32_t)s->main && ev->tid == (uint32_t)s->main &&
	    WIFEXITED(ev->exit.status) && WEXITSTATUS(ev->exit.status) == 0)
		s->main_exit++;
	if (ev->type == TR_DETERM && ev->determ.kind < 8)
		s->determ[ev->determ.kind]++;
	if (ev->type != TR_SYSCALL)
		return;
	s->syscalls++;
	bool ret = ev->flags & TRS_HAS_RET;
	if (ev->sys.nr == SYS_openat && ev->sys.str[0] && strcmp(ev->sys.str[0], s->file) == 0 && ret) {
		s->open_file++;
		s->open_file_ret = ev->sys.ret;
	}
	if (ev->sys.nr == SYS_openat && ev->sys.str[0] && strcmp(ev->sys.str[0], "/dev/urandom") == 0 &&
	    ret && ev->sys.ret >= 0)
		s->open_urandom++;
	if (ev->sys.nr == SYS_write && ev->sys.args[2] == 1 && ret && ev->sys.ret == 1)
		s->write_x++;
	if (ev->sys.nr == SYS_clock_gettime && (ev->flags & TRS_EMULATED) && ret && ev->sys.ret == 0)
		s->clock_emulated++;
}

TEST(record_mode_stream)
{
	const char *probe = helper("detprobe"), *dir = scratch_dir();
	if (!probe || !dir)
		SKIP("build/helpers/detprobe not built");
	char file[256];
	snprintf(file, sizeof(file), "%s/probe-rec", dir);
	char *argv[] = {(char *)probe, file, NULL};
	run_cfg cfg = {.cwd = dir};
	ptrace_opts o = PTRACE_OPTS_INIT;
	o.record = true;
	run a;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	seen s = {.file = file, .probe = probe, .main = a.res.pid};
	uint64_t n;
	CHECK(walk(&a, note, &s, &n));
	CHECK(n == a.res.records);
	CHECK(s.exec == 1);
	CHECK(s.open_file == 1 && s.open_file_ret == 3); /* fds 0-2, then the lowest free one */
	CHECK(s.open_urandom == 1);
	CHECK(s.write_x >= 1);
	CHECK(s.forks == 1);
	CHECK(s.main_exit == 1);
	CHECK(s.syscalls > 30);
	CHECK(s.determ[TRACE_DETERM_CLOCK] == 0); /* nothing substituted */
	run_free(&a);

	/* Recording with determinism: emulated calls are flagged, substitutions recorded. */
	snprintf(file, sizeof(file), "%s/probe-rec2", dir);
	char *argv2[] = {(char *)probe, file, "thread", NULL};
	o = det_opts(3);
	o.record = true;
	CHECK(run_cmd(&o, argv2, &cfg, &a) && exited_ok(&a));
	seen d = {.file = file, .probe = probe, .main = a.res.pid};
	CHECK(walk(&a, note, &d, &n));
	CHECK(d.exec == 1 && d.open_file == 1 && d.main_exit == 1);
	CHECK(d.open_urandom == 1); /* answered with the engine's pipe: still a success */
	CHECK(d.clock_emulated >= 2);
	CHECK(d.determ[TRACE_DETERM_CLOCK] >= 4);
	CHECK(d.determ[TRACE_DETERM_RANDOM] >= 4); /* getrandom x2, two opens, AT_RANDOM */
	CHECK(d.determ[TRACE_DETERM_RDTSC] == (determ_tsc_traps() ? 2 : 0));
	CHECK(d.determ[TRACE_DETERM_UNAME] == 1);
	CHECK(d.determ[TRACE_DETERM_STAT] >= 2);
	CHECK(d.determ[TRACE_DETERM_GETCPU] >= 1);
	CHECK(d.determ[TRACE_DETERM_CONCURRENCY] == 1);
	run_free(&a);
}

TEST(det_without_record_fd)
{
	const char *probe = helper("detprobe"), *dir = scratch_dir();
	if (!probe || !dir)
		SKIP("build/helpers/detprobe not built");
	char file[256];
	snprintf(file, sizeof(file), "%s/probe-norec", dir);
	char *argv[] = {(char *)probe, file, "sleep", NULL};
	run_cfg cfg = {.cwd = dir, .no_record = true};
	ptrace_opts o = det_opts(9);
	run a, b;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	CHECK(run_cmd(&o, argv, &cfg, &b) && exited_ok(&b));
	CHECK(a.rec_len == 0);
	/* pids differ (no namespace), the rest does not */
	static const char *const same[] = {"libc_realtime",   "getrandom",	  "urandom",
					   "at_random",	      "stat_mtime",	  "after_nanosleep",
					   "after_abs_sleep", "libc_realtime_end"};
	for (size_t i = 0; i < ARRAY_SIZE(same); i++)
		if (determ_tsc_traps() || strcmp(same[i], "rdtsc") != 0)
			CHECK(!field_differs(a.out, b.out, same[i]));
	/* Sleeps: really slept (2 x 20 ms), and the virtual clock moved by as much. */
	CHECK(a.secs >= 0.04);
	char *t1 = field(a.out, "after_nanosleep"), *t2 = field(a.out, "after_abs_sleep");
	CHECK(t1 && t2 && atof(t1) >= 1000.02 && atof(t2) - atof(t1) >= 0.0199);
	free(t1);
	free(t2);
	run_free(&a);
	run_free(&b);
}

TEST(python_reproducible)
{
	if (access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3");
	const char *dir = scratch_dir();
	if (!dir)
		SKIP("no scratch directory");
	unsetenv("PYTHONHASHSEED");
	/* As on a fresh root whose stdlib has no .pyc files yet: the first run
	 * writes them (new files, new times), the second reads them. Neither
	 * may move the clock: time.time() is the same. */
	char cache[256];
	snprintf(cache, sizeof(cache), "%s/pycache", dir);
	setenv("PYTHONPYCACHEPREFIX", cache, 1);
	char *argv[] = {"/usr/bin/python3", "-c",
			"import random,time,os,uuid,json,decimal; print(random.random(), time.time(), "
			"os.urandom(4).hex(), "
			"uuid.uuid4(), hash(\"x\"))",
			NULL};
	run_cfg cfg = {.cwd = "/"};
	ptrace_opts o = det_opts(7);
	run a, b, c;
	bool ran =
	    run_cmd(&o, argv, &cfg, &a) && exited_ok(&a) && run_cmd(&o, argv, &cfg, &b) && exited_ok(&b);
	unsetenv("PYTHONPYCACHEPREFIX");
	CHECK(ran);
	CHECK(same_output(&a, &b)); /* prints both outputs when they differ */
	if (!strstr(a.out, " 1700000000."))
		fprintf(stderr, "  output: %s\n", a.out);
	CHECK(strstr(a.out, " 1700000000.") != NULL); /* time.time() is the epoch (plus a few ticks) */
	o.seed = 8;
	CHECK(run_cmd(&o, argv, &cfg, &c) && exited_ok(&c));
	if (strcmp(a.out, c.out) == 0)
		fprintf(stderr, "  seeds 7 and 8 both gave: %s\n", a.out);
	CHECK(strcmp(a.out, c.out) != 0);
	run_free(&a);
	run_free(&b);
	run_free(&c);
}

static int put(const char *dir, const char *name, const char *text)
{
	char p[512];
	snprintf(p, sizeof(p), "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	if (!f)
		return -1;
	fputs(text, f);
	return fclose(f);
}

TEST(make_under_determinism)
{
	if (access("/usr/bin/make", X_OK) != 0 || access("/usr/bin/cc", X_OK) != 0)
		SKIP("no make or cc");
	const char *base = scratch_dir();
	CHECK(base);
	char dir[256];
	snprintf(dir, sizeof(dir), "%s/proj", base);
	CHECK(mkdir(dir, 0777) == 0 || errno == EEXIST);
	CHECK(put(dir, "Makefile",
		  "prog: main.o util.o\n\tcc -o prog main.o util.o\n"
		  "%.o: %.c util.h\n\tcc -c -o $@ $<\n") == 0);
	CHECK(put(dir, "util.h", "int twice(int);\n") == 0);
	CHECK(put(dir, "util.c", "#include \"util.h\"\nint twice(int x) { return 2 * x; }\n") == 0);
	CHECK(put(dir, "main.c",
		  "#include <stdio.h>\n#include \"util.h\"\nint main(void) { printf(\"%d\\n\", twice(21)); "
		  "}\n") == 0);
	char *argv[] = {"make", NULL};
	run_cfg cfg = {.cwd = dir};
	ptrace_opts o = det_opts(5);
	run a, b, c;
	/* A full build: sources from before the run, objects made in it. */
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	CHECK(strstr(a.out, "skew") == NULL && strstr(a.out, "in the future") == NULL);
	if (!strstr(a.out, "cc -o prog main.o util.o"))
		fprintf(stderr, "  first make said:\n%s\n", a.out);
	CHECK(strstr(a.out, "cc -o prog main.o util.o") != NULL);
	char prog[300];
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	CHECK(access(prog, X_OK) == 0);
	/* Again: everything is up to date. */
	CHECK(run_cmd(&o, argv, &cfg, &b) && exited_ok(&b));
	CHECK(strstr(b.out, "skew") == NULL && strstr(b.out, "in the future") == NULL);
	if (!strstr(b.out, "up to date"))
		fprintf(stderr, "  second make said:\n%s\n", b.out);
	CHECK(strstr(b.out, "up to date") != NULL);
	/* A source edited after that: only its object and the program are rebuilt. */
	usleep(20000);
	CHECK(put(dir, "util.c", "#include \"util.h\"\nint twice(int x) { return x + x; }\n") == 0);
	CHECK(run_cmd(&o, argv, &cfg, &c) && exited_ok(&c));
	CHECK(strstr(c.out, "skew") == NULL && strstr(c.out, "cc -c -o util.o util.c") != NULL);
	CHECK(strstr(c.out, "main.c") == NULL);
	run_free(&a);
	run_free(&b);
	run_free(&c);
}

TEST(exec_failure_is_127_or_126)
{
	const char *dir = scratch_dir();
	CHECK(dir);
	char *argv[] = {"/nonexistent/command", NULL};
	run_cfg cfg = {.cwd = dir};
	ptrace_opts o = det_opts(1);
	run a;
	CHECK(run_cmd(&o, argv, &cfg, &a));
	CHECK(WIFEXITED(a.res.status) && WEXITSTATUS(a.res.status) == 127 && a.res.exec_errno == ENOENT);
	run_free(&a);
	char plain[256];
	snprintf(plain, sizeof(plain), "%s/not-executable", dir);
	CHECK(put(dir, "not-executable", "data\n") == 0);
	char *argv2[] = {plain, NULL};
	o = (ptrace_opts)PTRACE_OPTS_INIT;
	o.record = true;
	CHECK(run_cmd(&o, argv2, &cfg, &a));
	CHECK(WIFEXITED(a.res.status) && WEXITSTATUS(a.res.status) == 126 && a.res.exec_errno == EACCES);
	run_free(&a);
}

TEST(signals_and_stops)
{
	/* Killed by a signal: the status says so. A group stop (SIGSTOP) holds
	 * until SIGCONT from another process, and handlers run. */
	char *argv[] = {"/bin/sh", "-c",
			"trap 'echo got-usr1' USR1; kill -USR1 $$; "
			"(sleep 0.2; kill -CONT $$) & kill -STOP $$; echo resumed; wait; kill -TERM $$",
			NULL};
	run_cfg cfg = {.cwd = "/"};
	for (int mode = 0; mode < 2; mode++) {
		ptrace_opts o = mode ? det_opts(1) : (ptrace_opts)PTRACE_OPTS_INIT;
		o.record = !mode;
		run a;
		CHECK(run_cmd(&o, argv, &cfg, &a));
		if (!(WIFSIGNALED(a.res.status) && WTERMSIG(a.res.status) == SIGTERM))
			fprintf(stderr, "  mode %d: status %#x output %s\n", mode, a.res.status, a.out);
		CHECK(WIFSIGNALED(a.res.status) && WTERMSIG(a.res.status) == SIGTERM);
		CHECK(strstr(a.out, "got-usr1\nresumed\n") != NULL);
		CHECK(a.secs >= 0.2);
		run_free(&a);
	}
}

static bool alive_untraced(pid_t pid)
{
	char path[64], buf[2048];
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = 0;
	char *st = strstr(buf, "\nState:"), *tp = strstr(buf, "\nTracerPid:");
	return st && tp && !strstr(st, "zombie") && strtol(tp + 11, NULL, 10) == 0;
}

TEST(background_children_at_exit)
{
	char *argv[] = {"/bin/sh", "-c", "sleep 3 & echo $!", NULL};
	run_cfg cfg = {.cwd = "/"};
	/* Recording only: the background process is detached and goes on untraced. */
	ptrace_opts o = PTRACE_OPTS_INIT;
	o.record = true;
	run a;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	pid_t bg = (pid_t)atoi(a.out);
	CHECK(a.secs < 2.5 && bg > 0 && a.res.leftovers == 1);
	CHECK(alive_untraced(bg));
	kill(bg, SIGKILL);
	run_free(&a);
	/* Determinism: it could not go on without the engine; it is killed. */
	o = det_opts(1);
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	bg = (pid_t)atoi(a.out);
	CHECK(a.secs < 2.5 && bg > 0 && a.res.leftovers == 1);
	usleep(100000);
	CHECK(!alive_untraced(bg));
	run_free(&a);
}

TEST(no_engine_fd_in_the_command)
{
	char *argv[] = {"/bin/sh", "-c", "exec ls /proc/self/fd", NULL};
	run_cfg cfg = {.cwd = "/"};
	ptrace_opts o = det_opts(1);
	o.record = true;
	run a;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	if (strcmp(a.out, "0\n1\n2\n3\n") != 0)
		fprintf(stderr, "  fds: %s\n", a.out);
	CHECK(strcmp(a.out, "0\n1\n2\n3\n") == 0); /* 3 is ls's own directory fd */
	run_free(&a);
}

TEST(first_pid_already_taken)
{
	/* pid 1 is in use (init's): refused, with the reason. */
	char *argv[] = {"/bin/true", NULL};
	run_cfg cfg = {.cwd = "/", .pidns = can_pidns(), .quiet = true};
	ptrace_opts o = det_opts(1);
	o.first_pid = 1;
	run a;
	CHECK(!run_cmd(&o, argv, &cfg, &a));
	if (a.code != SBX_E_CONFLICT || !strstr(a.msg, "pid 1") || !strstr(a.msg, "in use"))
		fprintf(stderr, "  got %d: %s\n", (int)a.code, a.msg);
	CHECK(a.code == SBX_E_CONFLICT && strstr(a.msg, "pid 1") != NULL && strstr(a.msg, "in use") != NULL);
	run_free(&a);
}

TEST(first_pid_below_the_next_free_pid)
{
	/* More processes ran in the namespace before the command than when
	 * recording: the pid the recording had is behind the next free one.
	 * The engine moves the namespace's pid counter back (ns_last_pid, as
	 * CRIU does) and the command gets its pid. */
	if (!can_pidns())
		SKIP("no pid namespace here (needs unshare(CLONE_NEWPID))");
	char *argv[] = {"/bin/sh", "-c", "echo $$; sh -c 'echo $$'", NULL};
	run_cfg cfg = {.cwd = "/", .pidns = true, .pre_forks = 40};
	ptrace_opts o = det_opts(1);
	o.first_pid = 20;
	run a;
	bool ok = run_cmd(&o, argv, &cfg, &a) && exited_ok(&a);
	if (!ok || a.res.pid != 20 || strcmp(a.out, "20\n21\n") != 0)
		fprintf(stderr, "  pid %d, output '%s', error '%s'\n", (int)a.res.pid, a.out ? a.out : "",
			a.msg);
	CHECK(ok && a.res.pid == 20 && strcmp(a.out, "20\n21\n") == 0);
	run_free(&a);
}

TEST(rootless)
{
	const char *probe = helper("detprobe"), *dir = scratch_dir();
	if (!probe || !dir)
		SKIP("build/helpers/detprobe not built");
	if (geteuid() != 0)
		SKIP_OK("already unprivileged: every other test ran rootless");
	char file[256], copy[256];
	snprintf(file, sizeof(file), "%s/probe-nobody", dir);
	/* nobody may not reach the checkout (a clone in /root, mode 0700, on a
	 * fresh machine): it runs a copy in the scratch directory. */
	snprintf(copy, sizeof(copy), "%s/detprobe", dir);
	CHECK(copy_exe(probe, copy));
	char *argv[] = {copy, file, NULL};
	run_cfg cfg = {.cwd = dir, .uid = 65534};
	ptrace_opts o = det_opts(1);
	o.record = true;
	run a, b;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	CHECK(run_cmd(&o, argv, &cfg, &b) && exited_ok(&b));
	static const char *const same[] = {
	    "libc_realtime", "sys_monotonic", "rdtsc",	    "getrandom",   "urandom",	       "at_random",
	    "nodename",	     "mmap",	      "stat_mtime", "statx_mtime", "libc_realtime_end"};
	for (size_t i = 0; i < ARRAY_SIZE(same); i++)
		if (determ_tsc_traps() || strcmp(same[i], "rdtsc") != 0)
			CHECK(!field_differs(a.out, b.out, same[i]));
	CHECK(field_is(a.out, "libc_realtime", "1700000000.000001000"));
	CHECK(field_is(a.out, "nodename", "detbox"));
	seen s = {.file = file, .probe = copy, .main = a.res.pid};
	uint64_t n;
	CHECK(walk(&a, note, &s, &n) && s.exec == 1 && s.open_file == 1 && s.main_exit == 1);
	run_free(&a);
	run_free(&b);
}

TEST(behind_sandbox_walls)
{
	/* What the engine meets inside sbx: no CAP_SYS_PTRACE or CAP_SYS_ADMIN,
	 * a non-dumpable parent, /proc read-only under Landlock, sbx's seccomp
	 * deny list (ptrace, NEW_LISTENER and personality(ADDR_NO_RANDOMIZE) pass). */
	const char *probe = helper("detprobe"), *dir = scratch_dir();
	if (!probe || !dir)
		SKIP("build/helpers/detprobe not built");
	char file[256], pdir[4096];
	snprintf(file, sizeof(file), "%s/probe-walls", dir);
	snprintf(pdir, sizeof(pdir), "%s", probe);
	*strrchr(pdir, '/') = 0;
	char *argv[] = {(char *)probe, file, NULL};
	run_cfg cfg = {.cwd = dir, .pidns = can_pidns(), .walls = true, .exec_dir = pdir};
	ptrace_opts o = det_opts(1);
	o.record = true;
	if (cfg.pidns)
		o.first_pid = 50;
	run a, b;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	CHECK(run_cmd(&o, argv, &cfg, &b) && exited_ok(&b));
	if (cfg.pidns)
		CHECK(same_output(&a, &b));
	CHECK(field_is(a.out, "libc_realtime", "1700000000.000001000")); /* the vDSO was patched */
	CHECK(field_is(a.out, "nodename", "detbox"));
	CHECK(!field_differs(a.out, b.out, "urandom") && !field_differs(a.out, b.out, "at_random"));
	CHECK(!field_differs(a.out, b.out, "mmap")); /* ASLR off */
	seen s = {.file = file, .probe = probe, .main = a.res.pid};
	uint64_t n;
	CHECK(walk(&a, note, &s, &n) && s.exec == 1 && s.open_file == 1 && s.main_exit == 1);
	run_free(&a);
	run_free(&b);
}

TEST(urandom_streams)
{
	/* Many bytes, many opens, reads of any size: the same with the same seed,
	 * whatever the timing (dd without iflag=fullblock copies what each read
	 * returns, so it shows short reads). */
	char *argv[] = {
	    "/bin/sh", "-c",
	    "head -c 3000000 /dev/urandom | sha256sum; for i in 1 2 3; do head -c 8 /dev/random | od -An "
	    "-tx1; "
	    "done; dd if=/dev/urandom bs=1M count=3 2>/dev/null | sha256sum; echo x > /dev/urandom",
	    NULL};
	run_cfg cfg = {.cwd = "/"};
	ptrace_opts o = det_opts(11);
	run a, b, c;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	CHECK(run_cmd(&o, argv, &cfg, &b) && exited_ok(&b));
	CHECK(same_output(&a, &b));
	o.seed = 12;
	CHECK(run_cmd(&o, argv, &cfg, &c) && exited_ok(&c));
	CHECK(strncmp(a.out, c.out, 64) != 0);
	run_free(&a);
	run_free(&b);
	run_free(&c);
}

/* ---- virtual time is exact: clock-heavy programs replayed many times ---- */

/* Busy loops on every CPU while a test runs: scheduling differences are what
 * expose a clock that depends on the order the engine sees stops in. */
typedef struct load {
	pid_t pid[8];
	int n;
} load;

static void load_start(load *l)
{
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	l->n = ncpu < 1 ? 1 : ncpu > 8 ? 8 : (int)ncpu;
	for (int i = 0; i < l->n; i++)
		if ((l->pid[i] = fork()) == 0) {
			alarm(120); /* never outlives a stuck test */
			for (volatile unsigned long x = 0;; x++)
				;
		}
}

static void load_stop(load *l)
{
	for (int i = 0; i < l->n; i++)
		if (l->pid[i] > 0) {
			kill(l->pid[i], SIGKILL);
			waitpid(l->pid[i], NULL, 0);
		}
}

/* Runs argv `times` times; every output must equal the first. Prints the
 * first divergence it saw and how many runs diverged. */
static bool replays_exactly(const char *label, char **argv, const run_cfg *cfg, uint64_t seed, int times)
{
	ptrace_opts o = det_opts(seed);
	run ref;
	if (!run_cmd(&o, argv, cfg, &ref) || !exited_ok(&ref))
		return false;
	int bad = 0;
	for (int i = 1; i < times; i++) {
		run r;
		if (!run_cmd(&o, argv, cfg, &r) || !exited_ok(&r)) {
			run_free(&r);
			bad++;
			break;
		}
		if (r.out_len != ref.out_len || memcmp(r.out, ref.out, ref.out_len) != 0) {
			if (bad++ == 0)
				fprintf(stderr,
					"  %s: run %d differs from run 0:\n--- run 0\n%s--- run %d\n%s---\n",
					label, i, ref.out, i, r.out);
		}
		run_free(&r);
	}
	if (bad)
		fprintf(stderr, "  %d of %d runs diverged\n", bad, times - 1);
	run_free(&ref);
	return bad == 0;
}

#define CLOCK_RUNS 50

static char *sh_argv[4] = {"/bin/sh", "-c", NULL, NULL};

TEST(det_clock_programs_replay_exactly)
{
	const char *dir = scratch_dir();
	if (!dir)
		SKIP("no scratch directory");
	bool py = access("/usr/bin/python3", X_OK) == 0;
	static const struct {
		const char *label, *script;
	} progs[] = {
	    {"date loop", "for i in 1 2 3 4 5 6 7 8; do date +%s.%N; done"},
	    {"date formats", "date; date -u +%s.%N; date -R"},
	    {"file times", "mkdir -p ft && cd ft && for i in 1 2 3; do echo $i > f$i; done; "
			   "ls -l --full-time; stat -c '%n %y %z %x' f1 f2 f3; touch f1; stat -c '%y' f1; "
			   "cd .. && rm -rf ft"},
	    /* a file changed again soon after it was seen: within one kernel tick or across two */
	    {"file rewritten",
	     "f=rw.$$; echo a > $f; stat -c %y $f; echo bb >> $f; stat -c %y $f; echo ccc >> $f; "
	     "date +%N; stat -c %y $f; rm $f"},
	    /* concurrent processes, each output in a fixed place */
	    {"pipeline", "date +%N | (date +%N; cat) | (date +%N; cat) | cat; "
			 "a=$(date +%N & date +%N; wait); echo \"$a\" | sort; date +%s.%N"},
	};
	run_cfg cfg = {.cwd = dir};
	load l;
	load_start(&l);
	bool ok = true;
	for (size_t i = 0; i < ARRAY_SIZE(progs); i++) {
		sh_argv[2] = (char *)progs[i].script;
		ok &= replays_exactly(progs[i].label, sh_argv, &cfg, 3, CLOCK_RUNS);
	}
	if (py) {
		char *pargv[] = {
		    "/usr/bin/python3", "-S", "-c",
		    "import time\nfor i in range(10): print(time.time_ns(), time.monotonic_ns())", NULL};
		ok &= replays_exactly("python time_ns", pargv, &cfg, 3, CLOCK_RUNS);
		/* Written, seen, written again microseconds later: within one
		 * kernel tick mostly, across two sometimes. */
		char *wargv[] = {"/usr/bin/python3", "-S", "-c",
				 "import os,time\nf='rw-py.%d' % os.getpid()\n"
				 "for i in range(20):\n"
				 "  open(f,'a').write('x')\n  s=os.stat(f)\n  time.time()\n"
				 "  print(s.st_mtime_ns, s.st_ctime_ns)\n"
				 "os.unlink(f)",
				 NULL};
		ok &= replays_exactly("python rewrite", wargv, &cfg, 3, CLOCK_RUNS);
	} else
		fprintf(stderr, "  (no /usr/bin/python3: the Python program was not run)\n");
	load_stop(&l);
	CHECK(ok);
}

TEST(det_clock_follows_the_fork_tree)
{
	/* Sequential commands see time pass (a reaped child's clock joins its
	 * parent's); a child starts from its parent's clock at the fork. */
	char *argv[] = {"/bin/sh", "-c", "date +%s%N; (date +%s%N; date +%s%N); date +%s%N", NULL};
	run_cfg cfg = {.cwd = "/"};
	ptrace_opts o = det_opts(1);
	run a;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	unsigned long long v[4] = {0};
	int n = sscanf(a.out, "%llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3]);
	if (n != 4 || !(v[0] < v[1] && v[1] < v[2] && v[2] < v[3]) || v[0] <= EPOCH)
		fprintf(stderr, "  output: %s\n", a.out);
	CHECK(n == 4 && v[0] > EPOCH && v[0] < v[1] && v[1] < v[2] && v[2] < v[3]);
	CHECK(v[3] - v[0] < 1000000); /* ticks, not real time */
	run_free(&a);
}

/* ---- procfs files of time, randomness and load ---- */

typedef struct procfs_seen {
	int n;		 /* TR_DETERM procfs records */
	char paths[512]; /* their paths, one a line */
} procfs_seen;

static void note_procfs(const trace_ev *ev, void *arg)
{
	procfs_seen *s = arg;
	if (ev->type != TR_DETERM || ev->determ.kind != TRACE_DETERM_PROCFS)
		return;
	s->n++;
	size_t l = strlen(s->paths), pl = strnlen((const char *)ev->determ.value, ev->determ.value_len);
	if (l + pl + 2 < sizeof(s->paths)) {
		memcpy(s->paths + l, ev->determ.value, pl);
		s->paths[l + pl] = '\n';
		s->paths[l + pl + 1] = 0;
	}
}

static bool uuid_v4(const char *u)
{
	if (strlen(u) != 36 || u[14] != '4' || !strchr("89ab", u[19]))
		return false;
	for (int i = 0; i < 36; i++)
		if ((i == 8 || i == 13 || i == 18 || i == 23) ? u[i] != '-'
							      : !strchr("0123456789abcdef", u[i]))
			return false;
	return true;
}

TEST(det_procfs_is_virtual)
{
	/* /proc/uptime, loadavg, stat and the random UUIDs: the same on every
	 * run with the seed, whatever the host's uptime and load, and
	 * plausible: uptime from the virtual boot clock (rising with virtual
	 * time), a new v4 UUID per open, one boot_id. Through cat, Python's
	 * open().read(), a dirfd, "..", a symlink; fstat, lseek and pread. */
	const char *dir = scratch_dir();
	if (!dir)
		SKIP("no scratch directory");
	if (access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3");
	char script[2048];
	snprintf(
	    script, sizeof(script),
	    "cat /proc/uptime; cat /proc/sys/kernel/random/uuid; cat /proc/sys/kernel/random/uuid; "
	    "cat /proc/sys/kernel/random/boot_id; cat /proc/sys/kernel/random/boot_id; cat /proc/loadavg; "
	    "grep -E '^(cpu0|btime)' /proc/stat; "
	    "/usr/bin/python3 -S -c '"
	    "import os, time\n"
	    "a = open(\"/proc/uptime\").read(); time.sleep(0.05); b = open(\"/proc/uptime\").read()\n"
	    "print(\"py\", a.split()[0], b.split()[0])\n"
	    "d = os.open(\"/proc\", os.O_RDONLY | os.O_DIRECTORY)\n"
	    "f = os.open(\"uptime\", os.O_RDONLY, dir_fd=d)\n"
	    "st = os.fstat(f); s = os.read(f, 100)\n"
	    "print(\"dirfd\", s.decode() == b, st.st_size == len(s), os.pread(f, 4, 1) == s[1:5], "
	    "os.lseek(f, 0, os.SEEK_END) == len(s))\n"
	    "try: os.write(f, b\"x\"); print(\"write allowed\")\n"
	    "except OSError: print(\"write refused\")\n"
	    "'; "
	    "sleep 0.2; cat /proc/self/../uptime; ln -sf /proc/sys/kernel/random/boot_id %s/boot_id; "
	    "cat %s/boot_id; cd /proc/sys/kernel && cat random/uuid; rm -f %s/boot_id",
	    dir, dir, dir);
	char *argv[] = {"/bin/sh", "-c", script, NULL};
	run_cfg cfg = {.cwd = dir};
	ptrace_opts o = det_opts(21);
	run a, b, c;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	CHECK(run_cmd(&o, argv, &cfg, &b) && exited_ok(&b));
	CHECK(same_output(&a, &b));
	char l[16][128];
	int n = 0;
	for (char *p = a.out; p && *p && n < 16; n++) {
		char *e = strchr(p, '\n');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		snprintf(l[n], sizeof(l[n]), "%.*s", (int)(k < 127 ? k : 127), p);
		p = e ? e + 1 : NULL;
	}
	if (n != 14)
		fprintf(stderr, "  output:\n%s\n", a.out);
	CHECK(n == 14);
	CHECK(strcmp(l[0], "1000.00 1000.00") == 0); /* a few virtual us after the start */
	CHECK(uuid_v4(l[1]) && uuid_v4(l[2]) && strcmp(l[1], l[2]) != 0);
	CHECK(uuid_v4(l[3]) && strcmp(l[3], l[4]) == 0 && strcmp(l[3], l[1]) != 0);
	CHECK(strcmp(l[5], "0.00 0.00 0.00 1/1 1") == 0);
	CHECK(strncmp(l[6], "cpu0 ", 5) == 0);
	char want[64];
	snprintf(want, sizeof(want), "btime %llu", (unsigned long long)(EPOCH / 1000000000ULL - 1000));
	CHECK(strcmp(l[7], want) == 0);
	double u0, u1;
	CHECK(sscanf(l[8], "py %lf %lf", &u0, &u1) == 2 && u0 >= 1000.0 && u1 >= u0 + 0.05 && u1 < 1001.0);
	CHECK(strcmp(l[9], "dirfd True True True True") == 0);
	CHECK(strcmp(l[10], "write refused") == 0);
	CHECK(sscanf(l[11], "%lf", &u1) == 1 &&
	      u1 >= u0 + 0.25);		 /* the shell's clock is past python's and the sleep */
	CHECK(strcmp(l[12], l[3]) == 0); /* boot_id through a symlink */
	CHECK(uuid_v4(l[13]) && strcmp(l[13], l[1]) != 0 && strcmp(l[13], l[2]) != 0);
	/* Each one recorded. */
	procfs_seen s = {0};
	uint64_t nrec;
	CHECK(walk(&a, note_procfs, &s, &nrec));
	if (s.n != 13)
		fprintf(stderr, "  procfs records: %d\n%s", s.n, s.paths);
	CHECK(s.n == 13); /* uptime 5, uuid 3, boot_id 3, loadavg, stat */
	CHECK(strstr(s.paths, "/proc/uptime\n") && strstr(s.paths, "/proc/sys/kernel/random/boot_id\n") &&
	      strstr(s.paths, "/proc/loadavg\n") && strstr(s.paths, "/proc/stat\n"));
	/* Another seed: other UUIDs, the same times. */
	o.seed = 22;
	CHECK(run_cmd(&o, argv, &cfg, &c) && exited_ok(&c));
	CHECK(strstr(c.out, l[1]) == NULL && strstr(c.out, l[3]) == NULL);
	CHECK(strncmp(c.out, "1000.00 1000.00\n", 16) == 0);
	run_free(&a);
	run_free(&b);
	run_free(&c);
}

TEST(det_procfs_behind_walls_and_rootless)
{
	/* Inside sbx the engine runs behind Landlock (/proc read-only) and sbx's
	 * seccomp list, and without privilege: the memfd, its seals and the
	 * read-only reopen through /proc/self/fd work there too. */
	const char *dir = scratch_dir();
	if (!dir)
		SKIP("no scratch directory");
	if (access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3");
	char *argv[] = {"/bin/sh", "-c",
			"cat /proc/uptime /proc/sys/kernel/random/boot_id; /usr/bin/python3 -S -c '"
			"import os, fcntl\n"
			"f = os.open(\"/proc/loadavg\", os.O_RDONLY)\n"
			"print(fcntl.fcntl(f, fcntl.F_GETFL) & os.O_ACCMODE == os.O_RDONLY, os.read(f, 64))'",
			NULL};
	run_cfg cfgs[] = {
	    {.cwd = dir, .pidns = can_pidns(), .walls = true, .exec_dir = "/usr"},
	    {.cwd = dir, .uid = geteuid() == 0 ? 65534 : 0},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cfgs); i++) {
		ptrace_opts o = det_opts(31);
		run a, b;
		CHECK(run_cmd(&o, argv, &cfgs[i], &a) && exited_ok(&a));
		CHECK(run_cmd(&o, argv, &cfgs[i], &b) && exited_ok(&b));
		CHECK(same_output(&a, &b));
		char u[40];
		if (sscanf(a.out, "1000.00 1000.00\n%36s\n", u) != 1 || strlen(u) != 36 ||
		    !strstr(a.out, "True b'0.00 0.00 0.00 1/1 1\\n'"))
			fprintf(stderr, "  run %zu: %s\n", i, a.out);
		CHECK(sscanf(a.out, "1000.00 1000.00\n%36s\n", u) == 1 && strlen(u) == 36);
		CHECK(strstr(a.out, "True b'0.00 0.00 0.00 1/1 1\\n'"));
		run_free(&a);
		run_free(&b);
	}
}

TEST(det_sysinfo_is_virtual)
{
	/* sysinfo(2) tells uptime and load too (busybox uptime, libuv's
	 * os.loadavg()): the same virtual values as /proc/uptime and loadavg;
	 * the memory fields stay the machine's. */
	if (access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3");
	char *argv[] = {
	    "/usr/bin/python3", "-S", "-c",
	    "import ctypes, time\n"
	    "class SI(ctypes.Structure):\n"
	    "  _fields_ = [('uptime', ctypes.c_long), ('loads', ctypes.c_ulong * 3),\n"
	    "    ('totalram', ctypes.c_ulong), ('rest', ctypes.c_ulong * 5), ('procs', ctypes.c_ushort),\n"
	    "    ('pad', ctypes.c_char * 22), ('mem_unit', ctypes.c_uint), ('f', ctypes.c_char * 8)]\n"
	    "libc = ctypes.CDLL(None)\n"
	    "for i in range(2):\n"
	    "  s = SI(); r = libc.sysinfo(ctypes.byref(s))\n"
	    "  print(r, s.uptime, list(s.loads), s.procs, s.totalram > 0, s.mem_unit > 0)\n"
	    "  time.sleep(1.5)\n",
	    NULL};
	run_cfg cfg = {.cwd = "/"};
	ptrace_opts o = det_opts(41);
	run a;
	CHECK(run_cmd(&o, argv, &cfg, &a) && exited_ok(&a));
	/* the kernel rounds a partial second up */
	if (strcmp(a.out, "0 1001 [0, 0, 0] 1 True True\n0 1002 [0, 0, 0] 1 True True\n") != 0)
		fprintf(stderr, "  output: %s\n", a.out);
	CHECK(strcmp(a.out, "0 1001 [0, 0, 0] 1 True True\n0 1002 [0, 0, 0] 1 True True\n") == 0);
	run_free(&a);
}

/* getrusage, wait4's rusage and times as determ_rusage says: CPU time from
 * the virtual clock (a busy loop costs none), children's from the reaped
 * children's, every counter 0; the same on every run. */
static const char rusage_py[] =
    "import os, resource, time\n"
    "sum(range(3000000))\n"
    "s = resource.getrusage(resource.RUSAGE_SELF)\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "  time.sleep(0.3); sum(range(1000000)); os._exit(0)\n"
    "_, st, w = os.wait4(pid, 0)\n"
    "c = resource.getrusage(resource.RUSAGE_CHILDREN)\n"
    "th = resource.getrusage(resource.RUSAGE_THREAD)\n"
    "t = os.times()\n"
    "n = lambda r: (r.ru_stime, r.ru_maxrss, r.ru_ixrss, r.ru_idrss, r.ru_isrss, r.ru_minflt,\n"
    "  r.ru_majflt, r.ru_nswap, r.ru_inblock, r.ru_oublock, r.ru_msgsnd, r.ru_msgrcv,\n"
    "  r.ru_nsignals, r.ru_nvcsw, r.ru_nivcsw)\n"
    "for r in (s, c, th, w): print(r.ru_utime, n(r))\n"
    "print(t.user, t.system, t.children_user, t.children_system)\n"
    "zero = all(v == 0 for r in (s, c, th, w) for v in n(r))\n"
    "print('VERDICT', s.ru_utime < 0.05, 0.3 <= w.ru_utime == c.ru_utime < 0.4, th.ru_utime > s.ru_utime,\n"
    "  zero, t.system == 0 and t.children_system == 0, 0.3 <= t.children_user < 0.4)\n";

/* A Python program run twice under determinism with one seed: both runs
 * end well, print `want`, and print the same. */
static void py_twice(const char *prog, uint64_t seed, const char *want, run *a, run *b)
{
	char *argv[] = {"/usr/bin/python3", "-S", "-c", (char *)prog, NULL};
	run_cfg cfg = {.cwd = "/"};
	ptrace_opts o = det_opts(seed);
	CHECK(run_cmd(&o, argv, &cfg, a) && exited_ok(a));
	CHECK(run_cmd(&o, argv, &cfg, b) && exited_ok(b));
	if (!strstr(a->out, want) || strcmp(a->out, b->out) != 0)
		fprintf(stderr, "  run 0:\n%s  run 1:\n%s", a->out, b->out);
	CHECK(strstr(a->out, want) != NULL);
	CHECK(strcmp(a->out, b->out) == 0);
}

TEST(det_rusage_is_virtual)
{
	if (access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3");
	run a, b;
	py_twice(rusage_py, 43, "VERDICT True True True True True True\n", &a, &b);
	run_free(&a);
	run_free(&b);
}

/* A process's stat line (determ_procfs_pid_stat): its accounting fields
 * from the virtual clock, however the path names it; the same every run.
 * The child's clock starts at its parent's (0.5 s), and it sleeps 0.3 s:
 * the parent's cutime is 80 ticks. */
static const char pid_stat_py[] =
    "import os, time\n"
    "f = lambda p, **k: os.read(os.open(p, os.O_RDONLY, **k), 4096).decode().rsplit(') ', 1)[1].split()\n"
    "sum(range(3000000))\n"
    "a = f('/proc/self/stat')\n"
    "time.sleep(0.5)\n"
    "pid = os.fork()\n"
    "if pid == 0:\n"
    "  c = f('/proc/self/stat'); p = f('/proc/%d/stat' % os.getppid()); time.sleep(0.3)\n"
    "  print('child', c[19], p[19], c[11]); os._exit(0)\n"
    "os.waitpid(pid, 0)\n"
    "b = f('/proc/thread-self/stat')\n"
    "d = f('stat', dir_fd=os.open('/proc/self', os.O_RDONLY))\n"
    "e = f('/proc/%d/task/%d/stat' % (os.getpid(), os.getpid()))\n"
    "z = lambda x: [x[i] for i in (7, 8, 9, 10, 12, 14, 21, 36, 39, 40, 41)]\n"
    "print(a[11], a[12], a[13], a[14], a[19], b[11], b[13], b[19], d[11], e[11])\n"
    "print('VERDICT', a[19] == '100000', int(b[11]) >= 50, b[13] == '80', d[13] == e[13] == '80',\n"
    "  set(z(a) + z(b) + z(d) + z(e)) == {'0'}, a[0] == b[0] == d[0] == e[0] == 'R')\n";

TEST(det_pid_stat_is_virtual)
{
	if (access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3");
	run a, b;
	py_twice(pid_stat_py, 44, "VERDICT True True True True True True\n", &a, &b);
	/* starttimes: after the 0.5 s sleep, and 0 */
	CHECK(strstr(a.out, "child 100050 100000 50\n") != NULL);
	run_free(&a);
	run_free(&b);
}

TEST(det_procfs_uuid_survives_interrupted_opens)
{
	/* A signal storm (a 50 us real-time itimer) interrupts opens while the
	 * engine answers them: an answer the caller never got must not count,
	 * so the UUIDs are the same as without the storm. */
	if (access("/usr/bin/python3", X_OK) != 0)
		SKIP("no /usr/bin/python3");
	static const char prog[] = "import hashlib, signal, sys\n"
				   "if sys.argv[1] == 'storm':\n"
				   "  signal.signal(signal.SIGALRM, lambda *a: None)\n"
				   "  signal.setitimer(signal.ITIMER_REAL, 0.00005, 0.00005)\n"
				   "h = hashlib.sha256()\n"
				   "for i in range(400):\n"
				   "  h.update(open('/proc/sys/kernel/random/uuid', 'rb').read())\n"
				   "signal.setitimer(signal.ITIMER_REAL, 0)\n"
				   "print(h.hexdigest())\n";
	char *calm[] = {"/usr/bin/python3", "-S", "-c", (char *)prog, "calm", NULL};
	char *storm[] = {"/usr/bin/python3", "-S", "-c", (char *)prog, "storm", NULL};
	run_cfg cfg = {.cwd = "/"};
	ptrace_opts o = det_opts(51);
	run a, b;
	CHECK(run_cmd(&o, calm, &cfg, &a) && exited_ok(&a));
	for (int i = 0; i < 3; i++) {
		CHECK(run_cmd(&o, storm, &cfg, &b) && exited_ok(&b));
		bool same = same_output(&a, &b);
		run_free(&b);
		CHECK(same);
	}
	run_free(&a);
}
