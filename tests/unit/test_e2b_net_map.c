/* E2B's network requests onto sbx's egress (src/server/e2b_net_map.h). */
#include <errno.h>
#include <string.h>

#include "server/e2b_net_map.h"
#include "unit.h"

static int map(const char *body, bool update, e2b_net *n, char *why)
{
	json_t *j = json_loads(body, JSON_DECODE_ANY, NULL);
	why[0] = 0;
	if (!j)
		return -9999;
	int r = e2b_net_map(j, update, n, why, 512);
	json_decref(j);
	return r;
}

static int cap_of(const char *network, e2b_net *c)
{
	json_t *j = network ? json_loads(network, 0, NULL) : NULL;
	char why[256];
	int r = e2b_net_cap_parse(j, c, why, sizeof(why));
	json_decref(j);
	return r;
}

TEST(nothing_asked_is_the_default_on_create_and_open_on_update)
{
	e2b_net n;
	char why[512];
	CHECK(map("{}", false, &n, why) == 0 && n.mode == E2B_NET_DEFAULT && n.n == 0);
	CHECK(map("{\"network\":{}}", false, &n, why) == 0 && n.mode == E2B_NET_DEFAULT);
	CHECK(map("{\"network\":{\"allowPublicTraffic\":false}}", false, &n, why) == 0 &&
	      n.mode == E2B_NET_DEFAULT);
	/* an update replaces everything: no field left is E2B's "all allowed" */
	CHECK(map("{}", true, &n, why) == 0 && n.mode == E2B_NET_OPEN && n.internet);
}

TEST(internet_flag)
{
	e2b_net n;
	char why[512];
	CHECK(map("{\"allow_internet_access\":true}", false, &n, why) == 0 && n.mode == E2B_NET_OPEN);
	CHECK(map("{\"allow_internet_access\":false}", false, &n, why) == 0 && n.mode == E2B_NET_ALLOW &&
	      n.n == 0 && !n.internet);
	CHECK(map("{\"allow_internet_access\":false}", true, &n, why) == 0 && n.mode == E2B_NET_ALLOW &&
	      n.n == 0);
	CHECK(map("{\"allow_internet_access\":\"yes\"}", false, &n, why) == -EINVAL &&
	      strstr(why, "allow_internet_access"));
}

TEST(only_these_domains_maps_to_an_allowlist)
{
	e2b_net n;
	char why[512];
	CHECK(map("{\"network\":{\"allowOut\":[\"example.com\",\"*.Example.org\",\"8.8.8.8\","
		  "\"1.1.1.1/32\",\"2001:db8::1\",\"pypi.org:443\"],\"denyOut\":[\"0.0.0.0/0\"]}}",
		  false, &n, why) == 0);
	CHECK(n.mode == E2B_NET_ALLOW && n.n == 6 && !n.internet);
	CHECK(strcmp(n.allow[0], "example.com:*") == 0);
	CHECK(strcmp(n.allow[1], "*.example.org:*") == 0);
	CHECK(strcmp(n.allow[2], "8.8.8.8:*") == 0);
	CHECK(strcmp(n.allow[3], "1.1.1.1:*") == 0);
	CHECK(strcmp(n.allow[4], "[2001:db8::1]:*") == 0);
	CHECK(strcmp(n.allow[5], "pypi.org:443") == 0);
	CHECK(n.allow[6] == NULL);
	e2b_net_clear(&n);
	/* internet off plus allowOut: the same (allowOut wins over the deny) */
	CHECK(map("{\"allowOut\":[\"a.test\"],\"allow_internet_access\":false}", true, &n, why) == 0);
	CHECK(n.mode == E2B_NET_ALLOW && n.n == 1 && strcmp(n.allow[0], "a.test:*") == 0);
	e2b_net_clear(&n);
	/* a deny of everything plus ranges: the ranges are subsumed */
	CHECK(map("{\"allowOut\":[\"a.test\"],\"denyOut\":[\"10.0.0.0/8\",\"::/0\"]}", true, &n, why) == 0);
	CHECK(n.mode == E2B_NET_ALLOW && n.n == 1);
	e2b_net_clear(&n);
}

TEST(what_lets_everything_out_is_open)
{
	e2b_net n;
	char why[512];
	/* E2B: allowOut without a deny leaves all traffic allowed */
	CHECK(map("{\"network\":{\"allowOut\":[\"example.com\"]}}", false, &n, why) == 0 &&
	      n.mode == E2B_NET_OPEN && n.n == 0 && n.allow == NULL);
	CHECK(map("{\"network\":{\"allowOut\":[\"0.0.0.0/0\"],\"denyOut\":[\"0.0.0.0/0\"]}}", false, &n,
		  why) == 0 &&
	      n.mode == E2B_NET_OPEN);
}

TEST(refusals_name_the_rule)
{
	e2b_net n;
	char why[512];
	CHECK(map("{\"network\":{\"allowOut\":[\"10.0.0.0/8\"],\"denyOut\":[\"0.0.0.0/0\"]}}", false, &n,
		  why) == -EINVAL);
	CHECK(strstr(why, "'10.0.0.0/8'") && strstr(why, "range"));
	CHECK(map("{\"denyOut\":[\"10.0.0.0/8\"]}", true, &n, why) == -EINVAL && strstr(why, "'10.0.0.0/8'"));
	CHECK(map("{\"denyOut\":[\"evil.test\"]}", true, &n, why) == -EINVAL && strstr(why, "evil.test"));
	CHECK(map("{\"allowOut\":[\"*\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &n, why) == -EINVAL &&
	      strstr(why, "allowOut[0] '*'"));
	CHECK(map("{\"allowOut\":[\"*.com\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &n, why) == -EINVAL);
	CHECK(map("{\"allowOut\":[\"1.2.3.4/33\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &n, why) == -EINVAL);
	CHECK(map("{\"allowOut\":[\"a/b\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &n, why) == -EINVAL);
	CHECK(map("{\"allowOut\":\"a.test\"}", true, &n, why) == -EINVAL && strstr(why, "array"));
	CHECK(map("{\"allowOut\":[1]}", true, &n, why) == -EINVAL);
	CHECK(map("{\"rules\":{\"a.test\":[{\"transform\":{}}]}}", true, &n, why) == -EINVAL &&
	      strstr(why, "rules"));
	CHECK(map("{\"egressProxy\":{\"address\":\"p:1080\"}}", true, &n, why) == -EINVAL);
	CHECK(map("{\"network\":{\"maskRequestHost\":\"x\"}}", false, &n, why) == -EINVAL);
	CHECK(map("{\"network\":{\"allowPublicTraffic\":true}}", false, &n, why) == -EINVAL);
	CHECK(map("{\"network\":{\"httpsPorts\":[3000]}}", false, &n, why) == -EINVAL);
	CHECK(map("{\"network\":[]}", false, &n, why) == -EINVAL);
	CHECK(map("[]", true, &n, why) == -EINVAL);
}

TEST(the_cap)
{
	e2b_net none, dev, open, req;
	char why[512];
	CHECK(cap_of(NULL, &none) == 0 && none.mode == E2B_NET_NONE);
	CHECK(cap_of("{\"mode\":\"none\"}", &none) == 0 && none.mode == E2B_NET_NONE);
	CHECK(cap_of("{\"mode\":\"allow\",\"allow\":[\"pypi.org\",\"*.example.com:*\",\"a.test:*\"]}",
		     &dev) == 0 &&
	      dev.mode == E2B_NET_ALLOW && dev.n == 3);
	CHECK(cap_of("{\"mode\":\"open\"}", &open) == 0 && open.mode == E2B_NET_OPEN);
	CHECK(cap_of("{\"mode\":\"allow\",\"allow\":[\"*\"]}", &req) == -EINVAL);

	/* nothing asked, or nothing allowed: within any cap */
	CHECK(map("{}", false, &req, why) == 0 && e2b_net_within(&none, &req, "C", why, 512) == 0);
	CHECK(map("{\"allow_internet_access\":false}", false, &req, why) == 0 &&
	      e2b_net_within(&none, &req, "C", why, 512) == 0);
	/* open only under open */
	CHECK(map("{\"allow_internet_access\":true}", false, &req, why) == 0);
	CHECK(e2b_net_within(&none, &req, "sbx serve --policy strict", why, 512) == -EPERM &&
	      strstr(why, "sbx serve --policy strict: no network"));
	CHECK(e2b_net_within(&dev, &req, "C", why, 512) == -EPERM && strstr(why, "only pypi.org"));
	CHECK(e2b_net_within(&open, &req, "C", why, 512) == 0);
	/* a list: each rule covered */
	CHECK(map("{\"allowOut\":[\"a.test\",\"x.example.com\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &req,
		  why) == 0);
	CHECK(e2b_net_within(&dev, &req, "C", why, 512) == 0);
	CHECK(e2b_net_within(&none, &req, "C", why, 512) == -EPERM && strstr(why, "'a.test:*'"));
	CHECK(e2b_net_within(&open, &req, "C", why, 512) == 0);
	e2b_net_clear(&req);
	/* every port is beyond a web-ports rule; one port is within */
	CHECK(map("{\"allowOut\":[\"pypi.org\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &req, why) == 0);
	CHECK(e2b_net_within(&dev, &req, "C", why, 512) == -EPERM && strstr(why, "'pypi.org:*'") &&
	      strstr(why, "host:port"));
	e2b_net_clear(&req);
	CHECK(map("{\"allowOut\":[\"pypi.org:443\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &req, why) == 0);
	CHECK(e2b_net_within(&dev, &req, "C", why, 512) == 0);
	e2b_net_clear(&req);
	CHECK(map("{\"allowOut\":[\"evil.test:443\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &req, why) == 0);
	CHECK(e2b_net_within(&dev, &req, "C", why, 512) == -EPERM && strstr(why, "evil.test:443"));
	e2b_net_clear(&req);
	/* open is every public host: an internal address needs the cap's own rule */
	CHECK(map("{\"allowOut\":[\"127.0.0.1\"],\"denyOut\":[\"0.0.0.0/0\"]}", true, &req, why) == 0);
	CHECK(e2b_net_within(&open, &req, "C", why, 512) == -EPERM && strstr(why, "'127.0.0.1:*'") &&
	      strstr(why, "every public host"));
	e2b_net clo;
	CHECK(cap_of("{\"mode\":\"open\",\"allow\":[\"127.0.0.1:*\"]}", &clo) == 0 &&
	      clo.mode == E2B_NET_OPEN);
	CHECK(e2b_net_within(&clo, &req, "C", why, 512) == 0);
	e2b_net_clear(&clo);
	e2b_net_clear(&req);
	e2b_net_clear(&dev);
}
