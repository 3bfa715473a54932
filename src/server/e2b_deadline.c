/* The E2B deadline thread (see e2b_deadline.h). */
#include "server/e2b_deadline.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "util/clock.h"
#include "util/err.h"
#include "util/json.h"
#include "util/log.h"
#include "util/macro.h"

struct e2b_deadline {
	sbx_ctx *ctx;
	e2b_store *store;
	e2b_events *events;   /* a reference */
	pthread_mutex_t lock; /* guards stopping; the thread waits on cond under it */
	pthread_cond_t cond;
	pthread_t thread;
	bool stopping;
};

static int64_t now_ms(void)
{
	return clock_ms(CLOCK_REALTIME);
}

/* Ends r at its deadline: pause (autoPause) or remove. */
static void expire(e2b_deadline *d, e2b_record *r)
{
	_cleanup_err_ sbx_err *e = NULL;
	if (r->auto_pause) {
		_cleanup_json_ json_t *out = NULL;
		int p = sbx_env_pause(d->ctx, r->id, &out, &e);
		if (p < 0 && sbx_err_code(e) == SBX_E_NOT_FOUND) {
			e2b_store_remove(d->store, r->id);
			e2b_events_drop(d->events, r->id);
			return;
		}
		if (p == 0) {
			e2b_events_add(d->events, r->id, E2B_LOG_INFO, "sandbox paused: its timeout passed",
				       (const char *const[]){"onTimeout", "pause"}, 2);
			r->paused = true;
			if (e2b_store_put(d->store, r, &e) == 0)
				return;
		}
	} else {
		int x = sbx_env_remove(d->ctx, r->id, &e);
		if (x == 0 || sbx_err_code(e) == SBX_E_NOT_FOUND) {
			e2b_store_remove(d->store, r->id);
			e2b_events_drop(d->events, r->id); /* gone: its logs with it */
			return;
		}
	}
	log_debug("e2b: sandbox %s past its deadline: %s (retrying in %d s)", r->id,
		  e ? sbx_err_message(e) : "?", E2B_RETRY_MS / 1000);
	sbx_err_free(TAKE_PTR(e));
	r->end_ms = now_ms() + E2B_RETRY_MS;
	if (e2b_store_put(d->store, r, &e) < 0) /* the memory copy then keeps the old deadline */
		log_debug("e2b: %s", sbx_err_message(e));
}

static void *deadline_main(void *arg)
{
	e2b_deadline *d = arg;
	pthread_mutex_lock(&d->lock);
	while (!d->stopping) {
		e2b_record due;
		bool is_due = false;
		int64_t now = now_ms();
		int64_t next = e2b_store_next_deadline(d->store, now, &due, &is_due);
		if (is_due) {
			pthread_mutex_unlock(&d->lock);
			expire(d, &due);
			e2b_record_clear(&due);
			pthread_mutex_lock(&d->lock);
			continue;
		}
		int64_t wake = next - now > 60000 ? now + 60000 : next;
		struct timespec ts = {.tv_sec = wake / 1000, .tv_nsec = (wake % 1000) * 1000000};
		pthread_cond_timedwait(&d->cond, &d->lock, &ts);
	}
	pthread_mutex_unlock(&d->lock);
	return NULL;
}

int e2b_deadline_start(sbx_ctx *ctx, e2b_store *store, e2b_events *events, e2b_deadline **ret, sbx_err **err)
{
	e2b_deadline *d = calloc(1, sizeof(*d));
	if (!d)
		return err_oom(err);
	d->ctx = ctx;
	d->store = store;
	d->events = e2b_events_ref(events);
	pthread_mutex_init(&d->lock, NULL);
	pthread_cond_init(&d->cond, NULL);
	if (pthread_create(&d->thread, NULL, deadline_main, d) != 0) {
		pthread_cond_destroy(&d->cond);
		pthread_mutex_destroy(&d->lock);
		e2b_events_unref(d->events);
		free(d);
		return err_set(err, SBX_E_INTERNAL, EAGAIN, "cannot start the E2B deadline thread");
	}
	*ret = d;
	return 0;
}

void e2b_deadline_poke(e2b_deadline *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
}

void e2b_deadline_stop(e2b_deadline *d)
{
	if (!d)
		return;
	pthread_mutex_lock(&d->lock);
	d->stopping = true;
	pthread_cond_signal(&d->cond);
	pthread_mutex_unlock(&d->lock);
	pthread_join(d->thread, NULL);
	pthread_cond_destroy(&d->cond);
	pthread_mutex_destroy(&d->lock);
	e2b_events_unref(d->events);
	free(d);
}
