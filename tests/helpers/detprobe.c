/* Determinism probe: prints every value a program can get from the clock,
 * randomness, the host and the kernel's allocator, one "name value" line each,
 * so two runs can be compared byte for byte. Static (tests/helpers), so libc's
 * clock_gettime reads the vDSO from a static binary too.
 *   detprobe FILE            FILE is created, stat'ed and removed
 *   detprobe FILE thread     also starts a second thread (concurrency record)
 *   detprobe FILE sleep      also sleeps 20 ms relative and absolute */
#define _GNU_SOURCE
#include <fcntl.h>
#include <sched.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void hex(const char *name, const unsigned char *b, size_t n)
{
	printf("%s ", name);
	for (size_t i = 0; i < n; i++)
		printf("%02x", b[i]);
	printf("\n");
}

static void ts(const char *name, const struct timespec *t)
{
	printf("%s %lld.%09ld\n", name, (long long)t->tv_sec, t->tv_nsec);
}

static void *thread_main(void *arg)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return arg;
}

int main(int argc, char **argv)
{
	struct timespec t;
	clock_gettime(CLOCK_REALTIME, &t);
	ts("libc_realtime", &t);
	clock_gettime(CLOCK_MONOTONIC, &t);
	ts("libc_monotonic", &t);
	syscall(SYS_clock_gettime, CLOCK_REALTIME, &t);
	ts("sys_realtime", &t);
	syscall(SYS_clock_gettime, CLOCK_MONOTONIC, &t);
	ts("sys_monotonic", &t);
	clock_gettime(CLOCK_BOOTTIME, &t);
	ts("libc_boottime", &t);
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	ts("libc_cputime", &t);
	printf("time %lld\n", (long long)time(NULL));
	struct timeval tv;
	gettimeofday(&tv, NULL);
	printf("gettimeofday %lld.%06ld\n", (long long)tv.tv_sec, (long)tv.tv_usec);
	uint32_t lo, hi, aux;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	printf("rdtsc %llu\n", (unsigned long long)hi << 32 | lo);
	__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
	printf("rdtscp %llu %u\n", (unsigned long long)hi << 32 | lo, aux);
	unsigned cpu = 99, node = 99;
	syscall(SYS_getcpu, &cpu, &node, NULL);
	printf("getcpu %u %u\n", cpu, node);
	printf("sched_getcpu %d\n", sched_getcpu());

	unsigned char b[16];
	if (getrandom(b, sizeof(b), 0) != (ssize_t)sizeof(b))
		return 2;
	hex("getrandom", b, sizeof(b));
	if (syscall(SYS_getrandom, b, sizeof(b), 0) != (long)sizeof(b))
		return 2;
	hex("sys_getrandom", b, sizeof(b));
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd < 0 || read(fd, b, sizeof(b)) != (ssize_t)sizeof(b))
		return 3;
	hex("urandom", b, sizeof(b));
	close(fd);
	fd = openat(AT_FDCWD, "/dev/random", O_RDONLY);
	if (fd < 0 || read(fd, b, sizeof(b)) != (ssize_t)sizeof(b))
		return 3;
	hex("random", b, sizeof(b));
	close(fd);
	hex("at_random", (const unsigned char *)getauxval(AT_RANDOM), 16);

	struct utsname u;
	uname(&u);
	printf("nodename %s\n", u.nodename);
	printf("getpid %d\n", (int)getpid());
	void *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("mmap %p\n", m);
	int stack;
	printf("stack %p\n", (void *)&stack);
	void *h = malloc(100000);
	printf("malloc %p\n", h);
	free(h);

	if (argc > 1) {
		fd = open(argv[1], O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0644);
		if (fd < 0 || write(fd, "x", 1) != 1)
			return 4;
		close(fd);
		struct stat st;
		if (stat(argv[1], &st) < 0)
			return 4;
		ts("stat_mtime", &st.st_mtim);
		ts("stat_ctime", &st.st_ctim);
		struct statx sx;
		if (statx(AT_FDCWD, argv[1], 0, STATX_BASIC_STATS | STATX_BTIME, &sx) < 0)
			return 4;
		printf("statx_mtime %lld.%09u\n", (long long)sx.stx_mtime.tv_sec, sx.stx_mtime.tv_nsec);
		unlink(argv[1]);
	}
	if (argc > 2 && strcmp(argv[2], "sleep") == 0) {
		struct timespec d = {0, 20000000}, a0, a1;
		nanosleep(&d, NULL);
		clock_gettime(CLOCK_MONOTONIC, &a0);
		ts("after_nanosleep", &a0);
		a1 = a0;
		a1.tv_nsec += 20000000;
		if (a1.tv_nsec >= 1000000000)
			a1.tv_sec++, a1.tv_nsec -= 1000000000;
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &a1, NULL);
		clock_gettime(CLOCK_MONOTONIC, &a0);
		ts("after_abs_sleep", &a0);
	}
	if (argc > 2 && strcmp(argv[2], "thread") == 0) {
		pthread_t th;
		pthread_create(&th, NULL, thread_main, NULL);
		pthread_join(th, NULL);
		printf("thread joined\n");
	}

	fflush(stdout);
	pid_t c = fork();
	if (c == 0)
		_exit(7);
	int st = 0;
	waitpid(c, &st, 0);
	printf("child %d %d\n", (int)c, WEXITSTATUS(st));
	clock_gettime(CLOCK_REALTIME, &t);
	ts("libc_realtime_end", &t);
	return 0;
}
