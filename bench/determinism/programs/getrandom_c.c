/* getrandom(2) as a raw syscall (all flag variants) and getentropy(3). */
#define _GNU_SOURCE
#include <stdio.h>
#include <sys/random.h>
#include <sys/syscall.h>
#include <unistd.h>
static void hex(const char *what, const unsigned char *b, int n) { printf("%-22s", what); for (int i = 0; i < n; i++) printf("%02x", b[i]); printf("\n"); }
int main(void)
{
	unsigned char b[32];
	long n = syscall(SYS_getrandom, b, 16, 0); hex("getrandom(0)", b, (int)n);
	n = syscall(SYS_getrandom, b, 16, GRND_NONBLOCK); hex("getrandom(NONBLOCK)", b, (int)n);
	n = syscall(SYS_getrandom, b, 16, GRND_RANDOM); hex("getrandom(RANDOM)", b, (int)n);
	n = syscall(SYS_getrandom, b, 32, GRND_INSECURE); hex("getrandom(INSECURE)", b, n > 0 ? (int)n : 0);
	getentropy(b, 16); hex("getentropy", b, 16);
	return 0;
}
