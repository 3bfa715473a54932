/* Detached threads: started once, never joined (a call's, a stream's, a
 * resolver's), so that their end frees nothing anyone waits for. */
#pragma once
#include <stddef.h>

/* Runs fn(arg) on a new detached thread with a stack of stack_bytes (0: the
 * default). pthread_create's result: 0, or an errno value (the thread was
 * not started and fn will not run). */
int thread_start_detached(void *(*fn)(void *), void *arg, size_t stack_bytes);
