/* The virtual procfs content of the determinism engine (determ_procfs.c):
 * which paths are candidates, and the bytes served, checked against fixed
 * expectations and against the shape of this machine's own files. */
#include <ctype.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "trace/determ_procfs.h"
#include "unit.h"
#include "util/macro.h"

#define EPOCH 1700000000000000000ULL /* 2023-11-14 22:13:20 UTC */

static size_t content(int kind, uint64_t vt, uint64_t seed, uint64_t proc_id, uint64_t idx, char *buf)
{
	determ_clock c = {.epoch_ns = EPOCH, .vt = vt};
	determ_rng rng;
	determ_rng_init(&rng, seed);
	determ_procfs_src s = {.clk = &c, .rng = &rng, .proc_id = proc_id, .uuid_index = idx};
	return determ_procfs_content(kind, &s, buf, DETERM_PROCFS_MAX);
}

static ssize_t read_host(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, buf, cap - 1);
	close(fd);
	if (n >= 0)
		buf[n] = 0;
	return n;
}

TEST(candidates_from_the_path_string)
{
	static const struct {
		const char *path;
		int kind;
	} cases[] = {
	    {"/proc/uptime", DETERM_PROCFS_UPTIME},
	    {"uptime", DETERM_PROCFS_UPTIME},
	    {"/proc/self/../uptime", DETERM_PROCFS_UPTIME},
	    {"/proc//loadavg", DETERM_PROCFS_LOADAVG},
	    {"/proc/stat", DETERM_PROCFS_STAT},
	    {"stat", DETERM_PROCFS_STAT},
	    {"/proc/self/../stat", DETERM_PROCFS_STAT},
	    {"/proc/sys/kernel/random/uuid", DETERM_PROCFS_UUID},
	    {"random/uuid", DETERM_PROCFS_UUID},
	    {"/proc/sys/kernel/random/boot_id", DETERM_PROCFS_BOOT_ID},
	    /* a process's stat: told apart from /proc/stat by the path */
	    {"/proc/self/stat", DETERM_PROCFS_PID_STAT},
	    {"/proc/thread-self/stat", DETERM_PROCFS_PID_STAT},
	    {"/proc/1234/stat", DETERM_PROCFS_PID_STAT},
	    {"/proc/1234//stat", DETERM_PROCFS_PID_STAT},
	    {"/proc/1/task/1/stat", DETERM_PROCFS_PID_STAT},
	    {"self/stat", DETERM_PROCFS_PID_STAT},
	    /* everything else costs nothing more */
	    {"/proc/self/status", DETERM_PROCFS_NONE},
	    {"/proc/self/schedstat", DETERM_PROCFS_NONE},
	    {"/proc/uptime/", DETERM_PROCFS_NONE},
	    {"/proc/uptimex", DETERM_PROCFS_NONE},
	    {"/etc/passwd", DETERM_PROCFS_NONE},
	    {"/dev/urandom", DETERM_PROCFS_NONE},
	    {"", DETERM_PROCFS_NONE},
	    {"/proc/sys/kernel/random/entropy_avail", DETERM_PROCFS_NONE},
	};
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		int k = determ_procfs_candidate(cases[i].path);
		if (k != cases[i].kind)
			fprintf(stderr, "  '%s': %d, want %d\n", cases[i].path, k, cases[i].kind);
		CHECK(k == cases[i].kind);
	}
	CHECK(strcmp(determ_procfs_path(DETERM_PROCFS_UPTIME), "/proc/uptime") == 0);
	CHECK(strcmp(determ_procfs_path(DETERM_PROCFS_BOOT_ID), "/proc/sys/kernel/random/boot_id") == 0);
	CHECK(determ_procfs_path(DETERM_PROCFS_NONE) == NULL && determ_procfs_path(DETERM_PROCFS_N) == NULL);
	CHECK(determ_procfs_is_sysctl(DETERM_PROCFS_UUID) && !determ_procfs_is_sysctl(DETERM_PROCFS_STAT));
}

TEST(uptime_is_the_virtual_boottime)
{
	char b[DETERM_PROCFS_MAX];
	size_t n = content(DETERM_PROCFS_UPTIME, 0, 1, 0, 0, b);
	CHECK(n == strlen("1000.00 1000.00\n"));
	CHECK_STREQ(b, "1000.00 1000.00\n");
	/* truncated to centiseconds, as the kernel does, not rounded */
	content(DETERM_PROCFS_UPTIME, 1239999999ULL, 1, 0, 0, b);
	CHECK_STREQ(b, "1001.23 1000.00\n");
	content(DETERM_PROCFS_UPTIME, 9999999ULL, 1, 0, 0, b);
	CHECK_STREQ(b, "1000.00 1000.00\n");
	content(DETERM_PROCFS_UPTIME, 10000000ULL, 1, 0, 0, b);
	CHECK_STREQ(b, "1000.01 1000.00\n");
	content(DETERM_PROCFS_UPTIME, 86400ULL * 1000000000ULL + 50000000ULL, 1, 0, 0, b);
	CHECK_STREQ(b, "87400.05 1000.00\n");
	/* the seed and the process do not matter: it is the clock */
	char c[DETERM_PROCFS_MAX];
	content(DETERM_PROCFS_UPTIME, 86400ULL * 1000000000ULL + 50000000ULL, 99, 7, 3, c);
	CHECK_STREQ(b, c);
}

TEST(uptime_in_the_kernels_format)
{
	/* This machine's /proc/uptime, reprinted from a clock at the same
	 * uptime: byte for byte the same first field, and the same shape. */
	char host[128], b[DETERM_PROCFS_MAX];
	if (read_host("/proc/uptime", host, sizeof(host)) <= 0)
		SKIP_OK("no /proc/uptime");
	unsigned long long s, cs, is, ics;
	CHECK(sscanf(host, "%llu.%2llu %llu.%2llu", &s, &cs, &is, &ics) == 4);
	uint64_t up = s * 1000000000ULL + cs * 10000000ULL;
	if (up < DETERM_MONO_BASE_NS)
		SKIP_OK("this machine has been up for less than 1000 s");
	content(DETERM_PROCFS_UPTIME, up - DETERM_MONO_BASE_NS + 4321, 1, 0, 0, b);
	CHECK(strncmp(b, host, strcspn(host, " ") + 1) == 0);
	CHECK(b[strlen(b) - 1] == '\n' && host[strlen(host) - 1] == '\n');
}

static bool uuid_shape(const char *u)
{
	if (strlen(u) != 37 || u[36] != '\n')
		return false;
	for (int i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? u[i] != '-' : !(isdigit((unsigned char)u[i]) || (u[i] >= 'a' && u[i] <= 'f')))
			return false;
	}
	return true;
}

TEST(uuid_is_v4_and_fresh_per_open)
{
	char a[DETERM_PROCFS_MAX], b[DETERM_PROCFS_MAX], c[DETERM_PROCFS_MAX], d[DETERM_PROCFS_MAX];
	CHECK(content(DETERM_PROCFS_UUID, 0, 5, 0, 0, a) == 37);
	CHECK(uuid_shape(a));
	CHECK(a[14] == '4');		      /* version */
	CHECK(strchr("89ab", a[19]) != NULL); /* variant */
	content(DETERM_PROCFS_UUID, 0, 5, 0, 1, b);
	CHECK(uuid_shape(b) && strcmp(a, b) != 0); /* the next open */
	content(DETERM_PROCFS_UUID, 123456, 5, 0, 0, c);
	CHECK_STREQ(a, c); /* the same open: the clock does not matter */
	content(DETERM_PROCFS_UUID, 0, 5, determ_proc_child_id(0, 0), 0, d);
	CHECK(uuid_shape(d) && strcmp(a, d) != 0); /* another process */
	content(DETERM_PROCFS_UUID, 0, 6, 0, 0, d);
	CHECK(strcmp(a, d) != 0); /* another seed */
	/* every byte pattern: version and variant bits forced, the rest kept */
	uint8_t ones[16], zeros[16] = {0};
	memset(ones, 0xff, sizeof(ones));
	char u[38];
	determ_procfs_uuid(ones, u);
	CHECK_STREQ(u, "ffffffff-ffff-4fff-bfff-ffffffffffff\n");
	determ_procfs_uuid(zeros, u);
	CHECK_STREQ(u, "00000000-0000-4000-8000-000000000000\n");
	/* the same shape as this machine's */
	char host[64];
	if (read_host("/proc/sys/kernel/random/uuid", host, sizeof(host)) > 0)
		CHECK(uuid_shape(host) && host[14] == '4');
}

TEST(boot_id_is_one_per_run)
{
	char a[DETERM_PROCFS_MAX], b[DETERM_PROCFS_MAX], u[DETERM_PROCFS_MAX];
	CHECK(content(DETERM_PROCFS_BOOT_ID, 0, 5, 0, 0, a) == 37);
	CHECK(uuid_shape(a) && a[14] == '4');
	content(DETERM_PROCFS_BOOT_ID, 999999999, 5, determ_proc_child_id(7, 2), 4, b);
	CHECK_STREQ(a, b); /* any process, any time, any open */
	content(DETERM_PROCFS_UUID, 0, 5, 0, 0, u);
	CHECK(strcmp(a, u) != 0); /* not the first uuid's */
	content(DETERM_PROCFS_BOOT_ID, 0, 6, 0, 0, b);
	CHECK(strcmp(a, b) != 0); /* the seed's */
}

TEST(loadavg_is_fixed)
{
	char b[DETERM_PROCFS_MAX], host[128];
	CHECK(content(DETERM_PROCFS_LOADAVG, 77777777777ULL, 3, 9, 9, b) == 21);
	CHECK_STREQ(b, "0.00 0.00 0.00 1/1 1\n");
	if (read_host("/proc/loadavg", host, sizeof(host)) > 0) {
		double l[3];
		unsigned run, all, last;
		char tail;
		CHECK(sscanf(host, "%lf %lf %lf %u/%u %u%c", &l[0], &l[1], &l[2], &run, &all, &last, &tail) ==
		      7);
		CHECK(sscanf(b, "%lf %lf %lf %u/%u %u%c", &l[0], &l[1], &l[2], &run, &all, &last, &tail) ==
		      7);
	}
}

/* The keyword of each line ("cpu" for cpuN) and its count of fields. */
static int stat_shape(const char *s, char kw[16][16], int nf[16])
{
	int n = 0;
	for (const char *p = s; *p && n < 16; n++) {
		const char *e = strchr(p, '\n');
		if (!e)
			return -1;
		char line[4096];
		size_t len = (size_t)(e - p) < sizeof(line) - 1 ? (size_t)(e - p) : sizeof(line) - 1;
		memcpy(line, p, len);
		line[len] = 0;
		sscanf(line, "%15s", kw[n]);
		if (strncmp(kw[n], "cpu", 3) == 0)
			kw[n][3] = 0;
		nf[n] = 0;
		for (char *t = strtok(line, " "); t; t = strtok(NULL, " "))
			nf[n]++;
		p = e + 1;
	}
	return n;
}

TEST(stat_is_one_virtual_cpu)
{
	char b[DETERM_PROCFS_MAX];
	uint64_t vt = 2345678901ULL; /* 2.34 s: 234 ticks */
	size_t n = content(DETERM_PROCFS_STAT, vt, 1, 0, 0, b);
	CHECK(n == strlen(b) && n > 0);
	CHECK_STREQ(b, "cpu  234 0 0 100000 0 0 0 0 0 0\n"
		       "cpu0 234 0 0 100000 0 0 0 0 0 0\n"
		       "intr 0\n"
		       "ctxt 0\n"
		       "btime 1699999000\n"
		       "processes 1\n"
		       "procs_running 1\n"
		       "procs_blocked 0\n"
		       "softirq 0 0 0 0 0 0 0 0 0 0 0\n");
	/* btime + uptime = the virtual realtime, whatever the clock */
	char up[DETERM_PROCFS_MAX];
	content(DETERM_PROCFS_UPTIME, vt, 1, 0, 0, up);
	double u = 0;
	sscanf(up, "%lf", &u);
	CHECK((uint64_t)(1699999000.0 + u) == (EPOCH + vt) / 1000000000ULL);
	/* the same keywords in the same order, the same fields per line, as this machine's */
	char host[65536];
	if (read_host("/proc/stat", host, sizeof(host)) <= 0)
		SKIP_OK("no /proc/stat");
	char kw[16][16], hkw[16][16];
	int nf[16], hnf[16];
	int k = stat_shape(b, kw, nf), hk = stat_shape(host, hkw, hnf);
	CHECK(k == 9 && hk >= 9);
	int j = 0;
	for (int i = 0; i < hk && j < k; i++) {
		if (strcmp(hkw[i], "cpu") == 0 && i > 1)
			continue; /* cpu1...: this machine has more CPUs than the virtual one */
		if (strcmp(hkw[i], kw[j]) != 0)
			fprintf(stderr, "  line %d: host '%s', ours '%s'\n", j, hkw[i], kw[j]);
		CHECK(strcmp(hkw[i], kw[j]) == 0);
		if (strcmp(kw[j], "intr") != 0) /* the host lists each of its interrupts */
			CHECK(hnf[i] == nf[j]);
		j++;
	}
	CHECK(j == k);
}

TEST(content_refuses_what_it_cannot_hold)
{
	determ_clock c = {.epoch_ns = EPOCH};
	determ_rng rng;
	determ_rng_init(&rng, 1);
	determ_procfs_src s = {.clk = &c, .rng = &rng};
	char b[DETERM_PROCFS_MAX];
	for (int k = 1; k < DETERM_PROCFS_N; k++) {
		if (k == DETERM_PROCFS_PID_STAT) { /* made from the kernel's line: determ_procfs_pid_stat */
			CHECK(determ_procfs_content(k, &s, b, sizeof(b)) == 0);
			continue;
		}
		CHECK(determ_procfs_content(k, &s, b, sizeof(b)) > 0);
		CHECK(determ_procfs_content(k, &s, b, 8) == 0);
	}
	CHECK(determ_procfs_content(DETERM_PROCFS_NONE, &s, b, sizeof(b)) == 0);
	CHECK(determ_procfs_content(DETERM_PROCFS_N, &s, b, sizeof(b)) == 0);
}

TEST(streams_do_not_collide)
{
	/* the root's streams of every kind, and the old ones unchanged (a trace
	 * recorded before keeps replaying) */
	CHECK(determ_stream(0, DETERM_STREAM_GETRANDOM, 0) == 0);
	CHECK(determ_stream(0, DETERM_STREAM_URANDOM, 4) == 5);
	CHECK(determ_stream(0, DETERM_STREAM_AT_RANDOM, 3) == (1ULL << 40) + 3);
	uint64_t seen[5 * 4];
	int n = 0;
	for (uint64_t kind = 0; kind <= DETERM_STREAM_BOOT_ID; kind++)
		for (uint64_t i = 0; i < 4; i++) {
			uint64_t s = determ_stream(0, kind, i);
			for (int j = 0; j < n; j++)
				CHECK(seen[j] != s || kind == DETERM_STREAM_GETRANDOM);
			if (kind != DETERM_STREAM_GETRANDOM || i == 0)
				seen[n++] = s;
		}
	uint64_t child = determ_proc_child_id(0, 0);
	CHECK(determ_stream(child, DETERM_STREAM_PROC_UUID, 0) !=
	      determ_stream(child, DETERM_STREAM_URANDOM, 0));
	CHECK(determ_stream(child, DETERM_STREAM_PROC_UUID, 0) !=
	      determ_stream(child, DETERM_STREAM_PROC_UUID, 1));
}

TEST(sysinfo_on_the_virtual_clock)
{
	struct sysinfo si;
	CHECK(sysinfo(&si) == 0);
	unsigned long ram = si.totalram;
	determ_clock c = {.epoch_ns = EPOCH, .vt = 0};
	determ_sysinfo_virtual(&si, &c);
	CHECK(si.uptime == 1000 && si.loads[0] == 0 && si.loads[1] == 0 && si.loads[2] == 0 && si.procs == 1);
	CHECK(si.totalram == ram); /* the machine's */
	c.vt = 1;		   /* a partial second counts as one, as the kernel rounds */
	determ_sysinfo_virtual(&si, &c);
	CHECK(si.uptime == 1001);
	c.vt = 5000000000ULL;
	determ_sysinfo_virtual(&si, &c);
	CHECK(si.uptime == 1005);
	/* agrees with /proc/uptime's first field, rounded up */
	char b[DETERM_PROCFS_MAX];
	content(DETERM_PROCFS_UPTIME, 5000000000ULL, 1, 0, 0, b);
	CHECK_STREQ(b, "1005.00 1000.00\n");
}

TEST(pid_stat_accounting_from_the_virtual_clock)
{
	/* a comm with a space and parentheses; the fields of a 6.x kernel (52) */
	static const char real[] =
	    "4321 (a) b (c)) S 4320 4321 4320 34816 4321 4194304 917 12 3 4 55 66 77 88 20 0 1 0 "
	    "123456789 26394624 1234 18446744073709551615 94000000000000 94000000100000 140000000000000 "
	    "0 0 0 0 0 0 0 0 0 17 5 0 0 9 10 11 94000000200000 94000000300000 94000000400000 "
	    "140000000100000 140000000100100 140000000100100 140000000200000 0\n";
	determ_pid_stat s = {
	    .cpu_ns = 2345678901ULL, .child_ns = 300000000ULL, .start_ns = 1500000000ULL, .running = true};
	char b[DETERM_PROCFS_MAX];
	size_t n = determ_procfs_pid_stat(real, strlen(real), &s, b, sizeof(b));
	CHECK(n == strlen(b));
	CHECK_STREQ(b, "4321 (a) b (c)) R 4320 4321 4320 34816 4321 4194304 0 0 0 0 234 0 30 0 20 0 1 0 "
		       "100150 26394624 0 18446744073709551615 94000000000000 94000000100000 140000000000000 "
		       "0 0 0 0 0 0 0 0 0 17 0 0 0 0 0 0 94000000200000 94000000300000 94000000400000 "
		       "140000000100000 140000000100100 140000000100100 140000000200000 0\n");
	/* another process's state is left as the kernel saw it */
	s.running = false;
	CHECK(determ_procfs_pid_stat(real, strlen(real), &s, b, sizeof(b)) == n && strstr(b, ") S 4320 "));
	/* this process's own line parses, and the time fields are replaced */
	char me[DETERM_PROCFS_MAX];
	ssize_t m = read_host("/proc/self/stat", me, sizeof(me));
	CHECK(m > 0);
	s = (determ_pid_stat){0};
	n = determ_procfs_pid_stat(me, (size_t)m, &s, b, sizeof(b));
	CHECK(n > 0 && strstr(b, ") R ") != NULL);
	/* not a stat line, or no room: 0 */
	CHECK(determ_procfs_pid_stat("Name:\tcat\n", 10, &s, b, sizeof(b)) == 0);
	CHECK(determ_procfs_pid_stat("1 (x) R 0\n", 10, &s, b, sizeof(b)) == 0);
	CHECK(determ_procfs_pid_stat(real, strlen(real), &s, b, 100) == 0);
}
