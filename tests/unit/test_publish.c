/* publish_prepare and publish_state (src/api/publish.h): a create's -p
 * specs, or a restart's record, into env_config; the refusals; the record. */
#include "api/publish.h"
#include "sbx.h"
#include "unit.h"
#include "util/json.h"

static void clear(env_config *c)
{
	free(c->ports);
	*c = (env_config){0};
}

/* Refused with invalid_argument and a message containing word. */
static bool refused(env_config *c, const char *const *specs, const char *word)
{
	sbx_err *e = NULL;
	bool ok = publish_prepare(c, specs, NULL, &e) < 0 && sbx_err_code(e) == SBX_E_INVALID_ARGUMENT &&
		  strstr(sbx_err_message(e), word) != NULL && !c->ports && !c->n_ports;
	sbx_err_free(e);
	return ok;
}

TEST(specs_into_config)
{
	env_config c = {.network = "none"};
	const char *const specs[] = {"8080:80", "0:8000", "0.0.0.0:9000:9000", "[::1]:0:8000", NULL};
	CHECK(publish_prepare(&c, specs, NULL, NULL) == 0);
	CHECK(c.n_ports == 4 && !c.ports_lenient);
	CHECK_STREQ(c.ports[0].host_ip, "127.0.0.1");
	CHECK(c.ports[0].host_port == 8080 && c.ports[0].port == 80 && c.ports[0].fd == -1);
	CHECK(c.ports[1].host_port == 0 && c.ports[1].port == 8000);
	CHECK_STREQ(c.ports[3].host_ip, "::1");
	/* The record: as configured, or with the ports the supervisor bound. */
	json_t *st = json_object();
	json_t *info = json_pack("{s:[{s:i},{s:i},{s:i},{s:i}]}", "ports", "host_port", 8080, "host_port",
				 41000, "host_port", 9000, "host_port", 42000);
	publish_state(&c, info, st);
	json_t *p = json_object_get(st, "ports");
	CHECK(json_array_size(p) == 4);
	CHECK(json_int(json_array_get(p, 1), "host_port", -1) == 41000);
	CHECK(json_int(json_array_get(p, 1), "port", -1) == 8000);
	CHECK_STREQ(json_str(json_array_get(p, 1), "protocol"), "tcp");
	/* A restart from that record keeps the bound ports, and only warns. */
	env_config r = {.network = "none"};
	CHECK(publish_prepare(&r, NULL, st, NULL) == 0);
	CHECK(r.n_ports == 4 && r.ports_lenient && r.ports[1].host_port == 41000);
	CHECK_STREQ(r.ports[3].host_ip, "::1");
	json_decref(st);
	json_decref(info);
	clear(&r);
	clear(&c);
	/* None: nothing, and no "ports" in the record. */
	CHECK(publish_prepare(&c, NULL, NULL, NULL) == 0 && c.n_ports == 0);
	st = json_object();
	publish_state(&c, NULL, st);
	CHECK(!json_object_get(st, "ports"));
	json_decref(st);
}

TEST(refusals)
{
	env_config c = {.network = "none"};
	CHECK(refused(&c, (const char *const[]){"1:80", "127.0.0.1:1:81", NULL}, "repeats"));
	CHECK(refused(&c, (const char *const[]){"0:80", "0:80", NULL}, "repeats"));
	CHECK(refused(&c, (const char *const[]){"70000:80", NULL}, "HOSTPORT"));
	/* The same host port on two addresses, or one inner port on two host
	 * ports, is fine. */
	CHECK(publish_prepare(&c, (const char *const[]){"1:80", "[::1]:1:80", "0:80", "2:80", NULL}, NULL,
			      NULL) == 0);
	clear(&c);
	c.network = "open";
	CHECK(refused(&c, (const char *const[]){"1:80", NULL}, "network open"));
	c = (env_config){.network = "none", .degraded = true};
	CHECK(refused(&c, (const char *const[]){"1:80", NULL}, "degraded"));
	const char *many[SBX_PUBLISH_MAX + 2];
	char buf[SBX_PUBLISH_MAX + 1][16];
	for (int i = 0; i <= SBX_PUBLISH_MAX; i++) {
		snprintf(buf[i], sizeof(buf[i]), "%d:80", 1000 + i);
		many[i] = buf[i];
	}
	many[SBX_PUBLISH_MAX + 1] = NULL;
	c = (env_config){.network = "none"};
	CHECK(refused(&c, many, "at most"));
	/* A corrupt record is an internal error, never a bind of garbage. */
	json_t *st =
	    json_pack("{s:[{s:i,s:i,s:s}]}", "ports", "port", 0, "host_port", 5, "host_ip", "127.0.0.1");
	sbx_err *e = NULL;
	CHECK(publish_prepare(&c, NULL, st, &e) < 0 && sbx_err_code(e) == SBX_E_INTERNAL);
	sbx_err_free(e);
	json_decref(st);
}
