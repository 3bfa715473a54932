/* A PRNG seeded from the time and the pid, the classic way. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
int main(void)
{
	srand((unsigned)time(NULL) ^ (unsigned)getpid());
	printf("%d %d %d\n", rand(), rand(), rand());
	struct timeval tv;
	gettimeofday(&tv, NULL);
	srandom((unsigned)(tv.tv_sec * 1000003 + tv.tv_usec));
	printf("%ld %ld\n", random(), random());
	return 0;
}
