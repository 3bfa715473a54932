/* sigign SIG... -- CMD [ARG...]: runs CMD with the given signals ignored,
 * set with the raw rt_sigaction system call, which (unlike glibc's
 * sigaction) also reaches glibc's internal signals 32 and 33. A caller of
 * sbx may start it so (seen in CI): the sandbox must hand its commands a
 * clean signal state all the same (tests/integration/test_exec.sh). */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	unsigned long mask;
};

int main(int argc, char **argv)
{
	int i = 1;
	for (; i < argc && strcmp(argv[i], "--"); i++) {
		struct ksigaction sa = {.handler = SIG_IGN};
		if (syscall(SYS_rt_sigaction, atoi(argv[i]), &sa, NULL, sizeof(sa.mask)) < 0) {
			perror("rt_sigaction");
			return 126;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: sigign SIG... -- CMD [ARG...]\n");
		return 2;
	}
	execvp(argv[i + 1], argv + i + 1);
	perror("exec");
	return 127;
}
