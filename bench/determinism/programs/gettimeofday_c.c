/* gettimeofday through the vDSO and as a raw syscall. */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
int main(void)
{
	struct timeval tv;
	gettimeofday(&tv, NULL);
	printf("gettimeofday     %lld.%06ld\n", (long long)tv.tv_sec, (long)tv.tv_usec);
	syscall(SYS_gettimeofday, &tv, NULL);
	printf("SYS_gettimeofday %lld.%06ld\n", (long long)tv.tv_sec, (long)tv.tv_usec);
	return 0;
}
