/* mkstemp/mkdtemp from glibc (random suffix from getrandom, clock as fallback). */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
int main(void)
{
	system("rm -rf /root/out/mkstemp_c");
	mkdir("/root/out/mkstemp_c", 0755);
	char a[] = "/root/out/mkstemp_c/fileXXXXXX", b[] = "/root/out/mkstemp_c/dirXXXXXX";
	int fd = mkstemp(a);
	if (fd < 0 || write(fd, "z", 1) != 1) return 1;
	close(fd);
	if (!mkdtemp(b)) return 1;
	printf("%s\n%s\n", a, b);
	fflush(stdout);
	return system("mktemp -p /root/out/mkstemp_c shXXXXXXXX");
}
