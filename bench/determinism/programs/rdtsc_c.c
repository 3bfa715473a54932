/* The time-stamp counter read directly by the CPU instructions rdtsc and rdtscp. */
#include <stdint.h>
#include <stdio.h>
static inline uint64_t rdtsc(void) { uint32_t lo, hi; __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi)); return ((uint64_t)hi << 32) | lo; }
static inline uint64_t rdtscp(uint32_t *aux) { uint32_t lo, hi; __asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(*aux)); return ((uint64_t)hi << 32) | lo; }
int main(void)
{
	uint32_t aux = 0;
	uint64_t a = rdtsc();
	volatile unsigned long x = 0;
	for (unsigned long i = 0; i < 1000000; i++) x += i;
	uint64_t b = rdtsc(), c = rdtscp(&aux);
	printf("rdtsc %llu %llu delta %llu\n", (unsigned long long)a, (unsigned long long)b, (unsigned long long)(b - a));
	printf("rdtscp %llu aux %u\n", (unsigned long long)c, aux);
	return 0;
}
