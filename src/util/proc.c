#include "util/proc.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/macro.h"

int proc_stat_start_time(const char *text, uint64_t *ret)
{
	const char *p = strrchr(text, ')');
	if (!p)
		return -EINVAL;
	p++;
	/* Fields after comm: 3 state, 4 ppid, ... 22 starttime. */
	for (int field = 3; field < 22; field++) {
		p += strspn(p, " ");
		if (!*p)
			return -EINVAL;
		p += strcspn(p, " ");
	}
	p += strspn(p, " ");
	char *end;
	errno = 0;
	unsigned long long v = strtoull(p, &end, 10);
	if (end == p || errno)
		return -EINVAL;
	*ret = v;
	return 0;
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
