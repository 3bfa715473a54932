#include "trace/determ_tsc.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

static bool traps;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void probe(void)
{
#if defined(__x86_64__) || defined(__i386__)
	pid_t pid = fork();
	if (pid < 0)
		return;
	if (pid == 0) {
		/* The default SIGSEGV action: a trap kills the child with it. */
		(void)signal(SIGSEGV, SIG_DFL);
		if (prctl(PR_SET_TSC, PR_TSC_SIGSEGV, 0, 0, 0) < 0)
			_exit(2);
		unsigned lo, hi;
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		_exit(lo == 0 && hi == 0 ? 3 : 0); /* reached: not trapped */
	}
	int st;
	while (waitpid(pid, &st, 0) < 0)
		;
	traps = WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV;
#endif
}

bool determ_tsc_traps(void)
{
	(void)pthread_once(&once, probe);
	return traps;
}
