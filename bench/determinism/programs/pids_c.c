/* pids: getpid, getppid, gettid, and the pids of children (fork, vfork,
 * posix_spawn), printed after each child exits. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>
extern char **environ;
int main(void)
{
	printf("pid %d ppid %d tid %d pgrp %d sid %d\n", getpid(), getppid(), gettid(), getpgrp(), getsid(0));
	fflush(stdout);
	for (int i = 0; i < 3; i++) {
		pid_t c = fork();
		if (c == 0) _exit(i);
		int st; waitpid(c, &st, 0);
		printf("fork child %d pid %d exit %d\n", i, c, WEXITSTATUS(st));
	}
	pid_t v = vfork();
	if (v == 0) _exit(7);
	int st; waitpid(v, &st, 0);
	printf("vfork child %d exit %d\n", v, WEXITSTATUS(st));
	pid_t s; char *argv[] = {"true", NULL};
	posix_spawnp(&s, "true", NULL, NULL, argv, environ);
	waitpid(s, &st, 0);
	printf("posix_spawn child %d exit %d\n", s, WEXITSTATUS(st));
	return 0;
}
