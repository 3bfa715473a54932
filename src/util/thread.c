/* Detached threads (thread.h). */
#include "util/thread.h"

#include <pthread.h>

int thread_start_detached(void *(*fn)(void *), void *arg, size_t stack_bytes)
{
	pthread_attr_t at;
	int r = pthread_attr_init(&at);
	if (r != 0)
		return r;
	r = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	if (r == 0 && stack_bytes)
		r = pthread_attr_setstacksize(&at, stack_bytes);
	pthread_t t;
	if (r == 0)
		r = pthread_create(&t, &at, fn, arg);
	pthread_attr_destroy(&at);
	return r;
}
