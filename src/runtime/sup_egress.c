/* The supervisor's egress proxy (network allow; docs/policy.md): the proxy
 * engine (src/policy/proxy.c) on a thread of its own, on the listening
 * socket init made inside the environment, with the environment's
 * allowlist, its log ($SBX_RUN/<id>/egress.log) and the plugins' on_egress.
 * The thread reads s->allow and s->plugins only; the loop swaps the
 * allowlist (the agent phase) with the thread stopped. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "plugin/plugin.h"
#include "policy/egress_match.h"
#include "policy/proxy.h"
#include "runtime/ctl_proto.h"
#include "runtime/sup_internal.h"
#include "util/fd.h"
#include "util/json.h"

/* One JSON line per connection in $SBX_RUN/<id>/egress.log. */
static void egress_log_event(void *ud, json_t *event)
{
	supervisor *s = ud;
	if (s->egress_log < 0)
		return;
	char *line = json_dumps(event, JSON_COMPACT);
	if (line) {
		size_t n = strlen(line);
		line[n] = '\n';
		(void)fd_write_all(s->egress_log, line, n + 1); /* O_APPEND: whole lines */
		free(line);
	}
}

/* proxy_opts.check: the plugins' on_egress (in a resolver thread). */
static int egress_plugin_check(void *ud, const char *kind, const char *host, int port, char *why, size_t cap)
{
	supervisor *s = ud;
	_cleanup_err_ sbx_err *e = NULL;
	if (plugin_env_egress(s->plugins, s->c->id, kind, host, port, &e) == 0)
		return 1;
	snprintf(why, cap, "%s", sbx_err_message(e));
	return 0;
}

static void *proxy_main(void *arg)
{
	supervisor *s = arg;
	proxy_opts o = PROXY_OPTS_INIT;
	o.stop_fd = s->proxy_stop;
	o.log = egress_log_event;
	o.ud = s;
	if (plugin_host_hooks(s->plugins) & PLUGIN_HOOK_EGRESS)
		o.check = egress_plugin_check;
	(void)proxy_serve(s->proxy_listen, s->allow, &o, NULL);
	return NULL;
}

/* The agent phase's allowlist (docs/secrets.md): the proxy thread is
 * stopped (connections of the setup phase end), the allowlist replaced and
 * the thread started again on the same listening socket, whose backlog keeps
 * what arrives meanwhile. */
int sup_egress_swap(supervisor *s, const json_t *allow, bool open, sbx_err **err)
{
	_cleanup_strv_free_ char **v = json_to_strv(allow);
	egress_allowlist *al = NULL;
	if (!v || (open ? egress_allowlist_parse_open((const char *const *)v, &al, err)
			: egress_allowlist_parse((const char *const *)v, &al, err)) < 0)
		return v ? err_wrap(err, "network allowlist")
			 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	uint64_t one = 1, drain;
	(void)!write(s->proxy_stop, &one, sizeof(one));
	pthread_join(s->proxy_thread, NULL);
	(void)!read(s->proxy_stop, &drain, sizeof(drain));
	egress_allowlist_free(s->allow);
	s->allow = al;
	int r = pthread_create(&s->proxy_thread, NULL, proxy_main, s);
	if (r != 0) {
		s->proxy_running = false; /* no proxy: nothing gets out at all */
		return err_errnum(err, r, "restart the egress proxy");
	}
	return 0;
}

void sup_egress_set(supervisor *s, int conn, const json_t *m)
{
	_cleanup_err_ sbx_err *e = NULL;
	const json_t *allow = json_object_get(m, "network_allow");
	/* "network": "internet" or "allow" (the default): a live environment
	 * moves between the two, both behind this proxy. */
	const char *mode = json_str(m, "network") ?: "allow";
	_cleanup_strv_free_ char **v = json_is_array(allow) ? json_to_strv(allow) : NULL;
	_cleanup_free_ char *mode_copy = strdup(mode);
	if (!net_proxied(mode))
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "network: allow or internet");
	else if (!mode_copy)
		err_set(&e, SBX_E_INTERNAL, ENOMEM, "out of memory");
	else if (!json_is_array(allow))
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL,
			"network_allow: an array of host[:port] patterns");
	else if (!v)
		err_set(&e, SBX_E_INTERNAL, ENOMEM, "out of memory");
	else if (!s->proxy_running)
		err_set(&e, SBX_E_CONFLICT, ENOTCONN,
			"the environment has no egress proxy (it was not created with network allow "
			"or internet)");
	else if (sup_egress_swap(s, allow, streq(mode, "internet"), &e) == 0) {
		strv_free(s->c->network_allow);
		s->c->network_allow = TAKE_PTR(v);
		free(s->c->network);
		s->c->network = TAKE_PTR(mode_copy);
	}
	sup_send_json(conn,
		      e ? sup_err_json(e) : json_pack("{s:s,s:b}", CTL_F_EV, CTL_EV_EGRESS, CTL_F_OK, 1),
		      NULL, 0);
}

int sup_egress_start(supervisor *s, sbx_err **err)
{
	if (s->proxy_listen < 0)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "no egress proxy socket from the environment");
	/* internet: every public host and port; its list only adds internal
	 * addresses (egress_match.h). */
	if ((streq(s->c->network, "internet")
		 ? egress_allowlist_parse_open((const char *const *)s->c->network_allow, &s->allow, err)
		 : egress_allowlist_parse((const char *const *)s->c->network_allow, &s->allow, err)) < 0)
		return err_wrap(err, "network allowlist");
	char p[4300];
	snprintf(p, sizeof(p), "%s/egress.log", s->c->run_dir);
	s->egress_log = open(p, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	s->proxy_stop = eventfd(0, EFD_CLOEXEC);
	if (s->proxy_stop < 0)
		return err_errno(err, "eventfd");
	int r = pthread_create(&s->proxy_thread, NULL, proxy_main, s);
	if (r != 0)
		return err_errnum(err, r, "start the egress proxy");
	s->proxy_running = true;
	return 0;
}

void sup_egress_stop(supervisor *s)
{
	if (s->proxy_running) {
		uint64_t one = 1;
		(void)!write(s->proxy_stop, &one, sizeof(one));
		pthread_join(s->proxy_thread, NULL);
		s->proxy_running = false;
	}
	s->proxy_stop = safe_close(s->proxy_stop);
	s->proxy_listen = safe_close(s->proxy_listen);
	s->egress_log = safe_close(s->egress_log);
	egress_allowlist_free(s->allow);
	s->allow = NULL;
}
