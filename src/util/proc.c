#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "util/macro.h"

int proc_stat_fields(const char *text, int first, int n, uint64_t *ret)
{
	const char *p = strrchr(text, ')');
	if (!p || first < 3 || n < 1)
		return -EINVAL;
	p++;
	/* Fields after comm (field 2) start with 3, the state. */
	for (int field = 3; field < first; field++) {
		p += strspn(p, " ");
		if (!*p || *p == '\n')
			return -EINVAL;
		p += strcspn(p, " \n");
	}
	for (int i = 0; i < n; i++) {
		p += strspn(p, " ");
		if (*p < '0' || *p > '9')
			return -EINVAL;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(p, &end, 10);
		if (errno || (*end && *end != ' ' && *end != '\n'))
			return -EINVAL;
		ret[i] = v;
		p = end;
	}
	return 0;
}

int proc_stat_start_time(const char *text, uint64_t *ret)
{
	return proc_stat_fields(text, 22, 1, ret);
}

int proc_start_time(pid_t pid, uint64_t *ret)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? -ESRCH : -errno;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -ESRCH;
	buf[n] = 0;
	return proc_stat_start_time(buf, ret);
}

bool proc_alive(pid_t pid, uint64_t start)
{
	uint64_t now;
	return pid > 0 && proc_start_time(pid, &now) == 0 && now == start;
}

int proc_set_title(const char *title)
{
	/* The title must stay readable for the kernel as long as we live:
	 * static storage (inherited by a clone, like the rest of memory). */
	static char buf[64];
	char text[1024];
	_cleanup_close_ int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t n = read(fd, text, sizeof(text) - 1);
	if (n <= 0)
		return n < 0 ? -errno : -EIO;
	text[n] = 0;
	/* proc(5): 26 startcode, 27 endcode, 28 startstack; 45 start_data,
	 * 46 end_data, 47 start_brk; 48-49 the argv bounds (replaced), 50-51
	 * environ's (kept). brk is not in stat: sbrk(0). */
	uint64_t code[3], data[3], env[2];
	if (proc_stat_fields(text, 26, 3, code) < 0 || proc_stat_fields(text, 45, 3, data) < 0 ||
	    proc_stat_fields(text, 50, 2, env) < 0)
		return -EINVAL;
	snprintf(buf, sizeof(buf), "%s", title);
	size_t len = strlen(buf) + 1;
	struct prctl_mm_map map = {
	    .start_code = code[0],
	    .end_code = code[1],
	    .start_stack = code[2],
	    .start_data = data[0],
	    .end_data = data[1],
	    .start_brk = data[2],
	    .brk = (uint64_t)(uintptr_t)sbrk(0),
	    .arg_start = (uint64_t)(uintptr_t)buf,
	    .arg_end = (uint64_t)(uintptr_t)buf + len,
	    .env_start = env[0],
	    .env_end = env[1],
	    .exe_fd = (uint32_t)-1,
	};
	if (prctl(PR_SET_MM, PR_SET_MM_MAP, (unsigned long)&map, sizeof(map), 0) < 0)
		return -errno;
	return 0;
}
