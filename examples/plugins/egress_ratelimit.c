/* egress_ratelimit: an sbx plugin that limits how often an environment may
 * connect to each host through the egress proxy.
 *
 *   {"network": {"allow": ["pypi.org", "files.pythonhosted.org"]},
 *    "plugins": [{"path": "/usr/lib/sbx/plugins/egress_ratelimit.so",
 *                 "config": {"max": 30, "window_s": 60}}]}
 *
 * At most `max` connections (CONNECT tunnels and plain HTTP requests) per
 * host (and port) in any `window_s` seconds; a connection over the limit gets
 * the proxy's 403 saying so, and is logged as refused (`sbx logs ID --net`).
 * Defaults: 60 connections per 60 s. Counts live in the environment's plugin
 * host, so each environment has its own, and they start again when the
 * environment restarts (`sbx restore`).
 *
 * Build: cc -shared -fPIC -O2 -Iinclude -o egress_ratelimit.so egress_ratelimit.c -ljansson */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sbx_plugin.h"

#define MAX_HOSTS 4096
#define MAX_PER_WINDOW 100000

typedef struct host {
	char *key;     /* "host:port" */
	int64_t *when; /* ring of the last `max` connection times (ms) */
	size_t head, n;
} host;

typedef struct limiter {
	size_t max;
	int64_t window_ms;
	host hosts[MAX_HOSTS];
	size_t n_hosts;
} limiter;

static int64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void fini(void *ctx)
{
	limiter *l = ctx;
	for (size_t i = 0; l && i < l->n_hosts; i++) {
		free(l->hosts[i].key);
		free(l->hosts[i].when);
	}
	free(l);
}

static int init(const char *config, void **ctx, char *errbuf, size_t errlen)
{
	limiter *l = calloc(1, sizeof(*l));
	if (!l)
		return -1;
	l->max = 60;
	l->window_ms = 60000;
	json_error_t je;
	json_t *cfg = json_loads(config, JSON_DECODE_ANY, &je);
	int r = -1;
	json_t *m = json_object_get(cfg, "max"), *w = json_object_get(cfg, "window_s");
	if (!cfg || !(json_is_object(cfg) || json_is_null(cfg)))
		snprintf(errbuf, errlen, "config must be an object {\"max\": N, \"window_s\": S}");
	else if (m &&
		 (!json_is_integer(m) || json_integer_value(m) < 1 || json_integer_value(m) > MAX_PER_WINDOW))
		snprintf(errbuf, errlen, "config.max must be an integer from 1 to %d", MAX_PER_WINDOW);
	else if (w && (!json_is_number(w) || json_number_value(w) <= 0 || json_number_value(w) > 86400))
		snprintf(errbuf, errlen, "config.window_s must be a number of seconds from 0 to 86400");
	else {
		if (m)
			l->max = (size_t)json_integer_value(m);
		if (w)
			l->window_ms = (int64_t)(json_number_value(w) * 1000);
		*ctx = l;
		l = NULL;
		r = 0;
	}
	json_decref(cfg);
	fini(l);
	return r;
}

static host *find(limiter *l, const char *key)
{
	for (size_t i = 0; i < l->n_hosts; i++)
		if (strcmp(l->hosts[i].key, key) == 0)
			return &l->hosts[i];
	if (l->n_hosts == MAX_HOSTS)
		return NULL;
	host *h = &l->hosts[l->n_hosts];
	h->key = strdup(key);
	h->when = calloc(l->max, sizeof(int64_t));
	if (!h->key || !h->when) {
		free(h->key);
		free(h->when);
		return NULL;
	}
	l->n_hosts++;
	return h;
}

static int on_egress(void *ctx, const sbx_plugin_egress *info, sbx_plugin_verdict *out)
{
	limiter *l = ctx;
	char key[300];
	snprintf(key, sizeof(key), "%s:%d", info->host, info->port);
	host *h = find(l, key);
	if (!h) {
		sbx_plugin_deny(out, "too many distinct hosts (%d) to keep counts for", MAX_HOSTS);
		return 0;
	}
	int64_t t = now_ms();
	/* drop what left the window (oldest first) */
	while (h->n && t - h->when[h->head] >= l->window_ms) {
		h->head = (h->head + 1) % l->max;
		h->n--;
	}
	if (h->n >= l->max) {
		int64_t wait = l->window_ms - (t - h->when[h->head]);
		sbx_plugin_deny(out, "more than %zu connections to %s in %lld s; retry in %lld s", l->max,
				key, (long long)(l->window_ms / 1000), (long long)((wait + 999) / 1000));
		return 0;
	}
	h->when[(h->head + h->n) % l->max] = t;
	h->n++;
	return 0;
}

static const struct sbx_plugin plugin = {
    .abi_version = SBX_PLUGIN_ABI_VERSION,
    .size = sizeof(struct sbx_plugin),
    .name = "egress_ratelimit",
    .description = "at most N connections per host in a time window",
    .init = init,
    .fini = fini,
    .on_egress = on_egress,
};
SBX_PLUGIN_DEFINE(plugin)
