/* Published ports at create (publish.h): specs checked and turned into
 * env_config, and their record. */
#include "api/publish.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/macro.h"

/* Whether m collides with one of the n before it: the same host address and
 * port, or (HOSTPORT 0) the same inner port twice on one host address. */
static bool publish_dup(const env_port *p, size_t n, const sbx_port_map *m)
{
	for (size_t i = 0; i < n; i++)
		if (streq(p[i].host_ip, m->host_ip) &&
		    (m->host_port ? p[i].host_port == m->host_port : !p[i].host_port && p[i].port == m->port))
			return true;
	return false;
}

int publish_prepare(env_config *c, const char *const *publish, const json_t *restore_state, sbx_err **err)
{
	const json_t *rec = restore_state ? json_object_get(restore_state, "ports") : NULL;
	size_t n = 0;
	if (restore_state)
		n = json_array_size(rec);
	else
		for (; publish && publish[n]; n++)
			;
	if (n == 0)
		return 0;
	if (n > SBX_PUBLISH_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, E2BIG, "publish: at most %d port mappings",
			       SBX_PUBLISH_MAX);
	if (c->degraded || streq(c->network ?: "none", "open"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "publish: the environment has no network namespace of its own (%s): its ports "
			       "are the host's already",
			       c->degraded ? "degraded mode" : "network open");
	_cleanup_free_ env_port *p = calloc(n, sizeof(*p));
	if (!p)
		return err_oom(err);
	for (size_t i = 0; i < n; i++) {
		sbx_port_map m;
		if (restore_state) {
			const json_t *e = json_array_get(rec, i);
			m = (sbx_port_map){.host_port = (int)json_int(e, "host_port", -1),
					   .port = (int)json_int(e, "port", 0)};
			snprintf(m.host_ip, sizeof(m.host_ip), "%s", json_str(e, "host_ip") ?: "");
			if (m.host_port < 0 || m.host_port > 65535 || m.port < 1 || m.port > 65535 ||
			    !m.host_ip[0])
				return err_set(err, SBX_E_INTERNAL, EINVAL, "corrupt state: ports");
		} else if (sbx_parse_publish(publish[i], &m, err) < 0) {
			return -1;
		}
		if (publish_dup(p, i, &m))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "publish: %s:%d:%d repeats a host address and port already published",
				       m.host_ip, m.host_port, m.port);
		snprintf(p[i].host_ip, sizeof(p[i].host_ip), "%s", m.host_ip);
		p[i].host_port = m.host_port;
		p[i].port = m.port;
		p[i].fd = -1;
	}
	c->ports = TAKE_PTR(p);
	c->n_ports = n;
	c->ports_lenient = restore_state != NULL;
	return 0;
}

void publish_state(const env_config *c, const json_t *info, json_t *st)
{
	if (!c->n_ports)
		return;
	const json_t *got = json_object_get(info, "ports");
	json_t *a = json_array();
	for (size_t i = 0; a && i < c->n_ports; i++) {
		int hp = (int)json_int(json_array_get(got, i), "host_port", c->ports[i].host_port);
		json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:i}", "port", c->ports[i].port, "protocol",
						   "tcp", "host_ip", c->ports[i].host_ip, "host_port", hp));
	}
	if (a)
		json_object_set_new(st, "ports", a);
}
