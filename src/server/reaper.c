/* Background removal for environment_destroy: see reaper.h. */
#include "server/reaper.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"
#include "util/thread.h"

typedef struct reap_item {
	sbx_ctx *ctx;
	char *id;
	bool taken; /* a worker is removing it */
} reap_item;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER, done = PTHREAD_COND_INITIALIZER;
static reap_item items[REAPER_MAX]; /* under lock; id NULL: a free slot */
static unsigned n_items, n_workers;

static void *reaper_main(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&lock);
	for (;;) {
		reap_item *it = NULL;
		for (size_t i = 0; i < ARRAY_SIZE(items) && !it; i++)
			if (items[i].id && !items[i].taken)
				it = &items[i];
		if (!it) {
			pthread_cond_wait(&work, &lock);
			continue;
		}
		it->taken = true;
		sbx_ctx *ctx = it->ctx;
		char *id = it->id;
		pthread_mutex_unlock(&lock);
		/* Errors are not reported: the client was told it is destroyed; an
		 * environment that could not be removed stays visible to sbx ls. */
		(void)sbx_env_remove(ctx, id, NULL);
		pthread_mutex_lock(&lock);
		free(id);
		*it = (reap_item){0};
		n_items--;
		pthread_cond_broadcast(&done);
	}
	return NULL;
}

/* Under lock: starts workers up to REAPER_THREADS; returns how many run. */
static unsigned reaper_start_locked(void)
{
	while (n_workers < REAPER_THREADS) {
		if (thread_start_detached(reaper_main, NULL, 0) != 0)
			break;
		n_workers++;
	}
	return n_workers;
}

int reaper_submit(sbx_ctx *ctx, const char *id)
{
	char *copy = strdup(id);
	if (!copy)
		return -1;
	pthread_mutex_lock(&lock);
	reap_item *slot = NULL;
	for (size_t i = 0; i < ARRAY_SIZE(items) && !slot; i++)
		if (!items[i].id)
			slot = &items[i];
	if (!slot || reaper_start_locked() == 0) {
		pthread_mutex_unlock(&lock);
		free(copy);
		return -1;
	}
	*slot = (reap_item){.ctx = ctx, .id = copy};
	n_items++;
	pthread_cond_signal(&work);
	pthread_mutex_unlock(&lock);
	return 0;
}

bool reaper_pending(const char *id)
{
	bool found = false;
	pthread_mutex_lock(&lock);
	for (size_t i = 0; i < ARRAY_SIZE(items) && !found; i++)
		found = items[i].id && streq(items[i].id, id);
	pthread_mutex_unlock(&lock);
	return found;
}

char **reaper_pending_ids(void)
{
	pthread_mutex_lock(&lock);
	char **v = calloc(n_items + 1, sizeof(*v));
	size_t n = 0;
	for (size_t i = 0; v && i < ARRAY_SIZE(items); i++) {
		if (!items[i].id)
			continue;
		if (!(v[n++] = strdup(items[i].id))) {
			strv_free(v);
			v = NULL;
		}
	}
	pthread_mutex_unlock(&lock);
	return v;
}

void reaper_drain(void)
{
	pthread_mutex_lock(&lock);
	while (n_items > 0)
		pthread_cond_wait(&done, &lock);
	pthread_mutex_unlock(&lock);
}
