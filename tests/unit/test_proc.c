/* Unit tests: src/util/proc.c, /proc/PID/stat parsing and the process title
 * (a forked child, so that the runner's own title stays). */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "unit.h"
#include "util/fs.h"
#include "util/macro.h"
#include "util/proc.h"

/* A stat line whose comm holds spaces and parentheses. */
static const char STAT[] = "42 (a) b (c)) S 1 42 42 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 "
			   "777 1000 10 18446744073709551615 1 2 3 0 0 0 0 0 0 0 0 0 17 1 0 0 0 0 0 "
			   "45 46 47 48 49 50 51 0\n";

TEST(stat_fields_after_a_hostile_comm)
{
	uint64_t v[4], st;
	CHECK(proc_stat_fields(STAT, 22, 1, v) == 0 && v[0] == 777);
	CHECK(proc_stat_start_time(STAT, &st) == 0 && st == 777);
	CHECK(proc_stat_fields(STAT, 48, 4, v) == 0 && v[0] == 48 && v[3] == 51);
	CHECK(proc_stat_fields(STAT, 25, 1, v) == 0 && v[0] == UINT64_MAX);
	CHECK(proc_stat_fields(STAT, 4, 1, v) == 0 && v[0] == 1);
}

TEST(stat_fields_refuse_malformed_text)
{
	uint64_t v[2];
	CHECK(proc_stat_fields("no parenthesis 1 2 3", 3, 1, v) == -EINVAL);
	CHECK(proc_stat_fields(STAT, 3, 1, v) == -EINVAL);  /* the state is a letter */
	CHECK(proc_stat_fields(STAT, 52, 2, v) == -EINVAL); /* past the end */
	CHECK(proc_stat_fields(STAT, 2, 1, v) == -EINVAL);  /* comm is not a number */
	CHECK(proc_stat_fields("1 (x) S 12abc 3\n", 4, 1, v) == -EINVAL);
	CHECK(proc_stat_fields("1 (x) S -5 3\n", 4, 1, v) == -EINVAL);
	CHECK(proc_stat_fields("1 (x) S 99999999999999999999999 3\n", 4, 1, v) == -EINVAL);
	CHECK(proc_stat_fields("1 (x) S 5\n", 4, 2, v) == -EINVAL);
}

static int child_title(void)
{
	_cleanup_free_ char *env0 = NULL;
	size_t m0 = 0;
	if (fs_read_file("/proc/self/environ", 1 << 20, &env0, &m0) < 0)
		return 1;
	if (proc_set_title("sbx-test-title") < 0)
		return 2;
	_cleanup_free_ char *cmd = NULL, *env = NULL;
	size_t n = 0, m = 0;
	if (fs_read_file("/proc/self/cmdline", 4096, &cmd, &n) < 0 ||
	    fs_read_file("/proc/self/environ", 1 << 20, &env, &m) < 0)
		return 3;
	if (n != sizeof("sbx-test-title") || memcmp(cmd, "sbx-test-title", n) != 0)
		return 4;
	/* environ stays: the store's processes are found by it */
	if (m != m0 || memcmp(env, env0, m) != 0)
		return 6;
	/* malloc still works: the brk passed back was the current one */
	for (int i = 0; i < 1000; i++) {
		void *p = malloc(4096);
		if (!p)
			return 5;
		memset(p, 1, 4096);
	}
	return 0;
}

TEST(set_title_hides_argv_keeps_environ)
{
	pid_t p = fork();
	CHECK(p >= 0);
	if (p == 0)
		_exit(child_title());
	int st;
	CHECK(waitpid(p, &st, 0) == p);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}
