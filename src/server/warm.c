/* The server's warm set (see warm.h): a create observer that counts, and a
 * thread that applies warm_plan's decisions with sbx_pool_set_owned, once
 * a second or at once when a create raises a key's want. The pools are
 * built by the library's refillers (detached processes), so a create never
 * waits for this thread. */
#include "server/warm.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "server/warm_plan.h"
#include "util/clock.h"
#include "util/err.h"
#include "util/json.h"
#include "util/log.h"
#include "util/macro.h"

#define WARM_TICK_MS 1000

struct warm {
	sbx_ctx *ctx;
	pthread_mutex_t lock; /* guards plan and stopping */
	pthread_cond_t cond;
	warm_plan plan;
	bool stopping, poked;
	pthread_t thread;
};

static void on_create(void *userdata, const char *source, const sbx_pool_opts *o, bool from_pool)
{
	warm *w = userdata;
	pthread_mutex_lock(&w->lock);
	int i = warm_plan_observe(&w->plan, source, o->policy, o->code, clock_ms(CLOCK_MONOTONIC));
	if (i >= 0 && w->plan.keys[i].size == 0 && !w->plan.keys[i].foreign) {
		/* A key without a pool may just have become hot: decide now. */
		w->poked = true;
		pthread_cond_signal(&w->cond);
	}
	pthread_mutex_unlock(&w->lock);
}

/* Sets key i's pool to its want (the lock is dropped meanwhile: a pool set
 * starts a refiller, a removal waits for one). */
static void apply(warm *w, size_t i)
{
	warm_key k = w->plan.keys[i];
	pthread_mutex_unlock(&w->lock);
	_cleanup_json_ json_t *out = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	sbx_pool_opts po = SBX_POOL_OPTS_INIT;
	po.policy = k.has_policy ? k.policy : NULL;
	po.code = k.code;
	int r = sbx_pool_set_owned_opts(w->ctx, k.source, k.want, &po, &out, &e);
	bool foreign = r == 0 && !json_bool(out, "owned", true);
	if (r < 0)
		log_debug("warm: pool of %s: %s", k.source, sbx_err_message(e));
	else
		log_debug("warm: pool of %s%s%s%s: %d%s", k.source, k.has_policy ? " policy " : "",
			  k.has_policy ? k.policy : "", k.code ? " code" : "", k.want,
			  foreign ? " (a user's pool: left alone)" : "");
	pthread_mutex_lock(&w->lock);
	warm_key *now = &w->plan.keys[i];
	if (strcmp(now->source, k.source) != 0 || now->has_policy != k.has_policy || now->code != k.code ||
	    strcmp(now->policy, k.policy) != 0)
		return; /* the slot was given to another key meanwhile (only slots without a pool are) */
	if (r == 0 && !foreign) {
		now->size = k.want;
		return;
	}
	/* A user's pool, or a source that cannot be pooled (gone, refused):
	 * left alone for a while. */
	now->foreign = true;
	now->foreign_until_ms = clock_ms(CLOCK_MONOTONIC) + WARM_FOREIGN_RECHECK_MS;
	if (foreign)
		now->size = 0;
}

static void *warm_main(void *arg)
{
	warm *w = arg;
	pthread_mutex_lock(&w->lock);
	while (!w->stopping) {
		warm_plan_decide(&w->plan, clock_ms(CLOCK_MONOTONIC));
		for (size_t i = 0; i < w->plan.n && !w->stopping; i++)
			if (warm_plan_should_apply(&w->plan.keys[i]))
				apply(w, i);
		if (w->stopping)
			break;
		if (!w->poked) {
			struct timespec ts;
			clock_gettime(CLOCK_MONOTONIC, &ts);
			ts.tv_sec += WARM_TICK_MS / 1000;
			pthread_cond_timedwait(&w->cond, &w->lock, &ts);
		}
		w->poked = false;
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

int warm_start(sbx_ctx *ctx, const warm_opts *o, warm **ret, sbx_err **err)
{
	*ret = NULL;
	/* The plan's budget is in units of a plain entry (a code entry costs
	 * WARM_CODE_COST of them): --warm N caps it as well, so that it never
	 * holds more than N entries. */
	int64_t by_memory = o->memory_bytes / WARM_ENTRY_BYTES;
	int max = o->max_entries < by_memory ? o->max_entries : (int)by_memory;
	if (max <= 0)
		return 0;
	warm *w = calloc(1, sizeof(*w));
	if (!w)
		return err_oom(err);
	w->ctx = ctx;
	warm_plan_init(&w->plan, max);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&w->cond, &ca);
	pthread_condattr_destroy(&ca);
	pthread_mutex_init(&w->lock, NULL);
	if (pthread_create(&w->thread, NULL, warm_main, w) != 0) {
		pthread_cond_destroy(&w->cond);
		pthread_mutex_destroy(&w->lock);
		free(w);
		return err_set(err, SBX_E_INTERNAL, EAGAIN, "cannot start the warm set's thread");
	}
	sbx_ctx_set_create_observer_opts(ctx, on_create, w);
	*ret = w;
	return 0;
}

void warm_stop(warm *w)
{
	if (!w)
		return;
	sbx_ctx_set_create_observer_opts(w->ctx, NULL, NULL);
	pthread_mutex_lock(&w->lock);
	w->stopping = true;
	pthread_cond_signal(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	for (size_t i = 0; i < w->plan.n; i++) {
		warm_key *k = &w->plan.keys[i];
		if (k->size == 0 || k->foreign)
			continue;
		_cleanup_json_ json_t *out = NULL;
		_cleanup_err_ sbx_err *e = NULL;
		sbx_pool_opts po = SBX_POOL_OPTS_INIT;
		po.policy = k->has_policy ? k->policy : NULL;
		po.code = k->code;
		if (sbx_pool_set_owned_opts(w->ctx, k->source, 0, &po, &out, &e) < 0)
			log_debug("warm: remove the pool of %s: %s", k->source, sbx_err_message(e));
	}
	pthread_cond_destroy(&w->cond);
	pthread_mutex_destroy(&w->lock);
	free(w);
}
