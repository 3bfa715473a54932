/* Two threads increment a shared counter WITHOUT a lock: lost updates depend
 * on where the scheduler preempts a thread. */
#include <pthread.h>
#include <stdio.h>
static volatile long counter;
static void *work(void *arg)
{
	for (int i = 0; i < 20000000; i++) counter++;
	return arg;
}
int main(void)
{
	pthread_t a, b;
	pthread_create(&a, NULL, work, NULL);
	pthread_create(&b, NULL, work, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	printf("counter %ld (40000000 without a race)\n", counter);
	return 0;
}
