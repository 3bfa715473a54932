/* pthreads incrementing a shared counter under a mutex. */
#include <pthread.h>
#include <stdio.h>
static long counter;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static void *work(void *arg)
{
	for (int i = 0; i < 200000; i++) { pthread_mutex_lock(&mu); counter++; pthread_mutex_unlock(&mu); }
	return arg;
}
int main(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++) pthread_create(&t[i], NULL, work, NULL);
	for (int i = 0; i < 4; i++) pthread_join(t[i], NULL);
	printf("counter %ld\n", counter);
	return 0;
}
