/* Addresses that ASLR randomizes: stack, heap (brk), mmap, the executable,
 * shared libraries, the vDSO (auxv). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/auxv.h>
#include <sys/mman.h>
int main(void)
{
	int local = 0;
	void *small = malloc(16), *big = malloc(4 << 20);
	void *m = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	printf("stack %p\nheap %p\nbig malloc %p\nmmap %p\nmain %p\nprintf %p\n", (void *)&local, small, big, m, (void *)main,
	       (void *)printf);
	printf("vdso %#lx AT_RANDOM bytes %02x%02x%02x%02x\n", getauxval(AT_SYSINFO_EHDR), ((unsigned char *)getauxval(AT_RANDOM))[0],
	       ((unsigned char *)getauxval(AT_RANDOM))[1], ((unsigned char *)getauxval(AT_RANDOM))[2],
	       ((unsigned char *)getauxval(AT_RANDOM))[3]);
	return 0;
}
