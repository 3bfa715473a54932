/* Egress allowlist parsing and matching, and the proxy's pure parsers. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>

#include "policy/egress_match.h"
#include "util/macro.h"
#include "policy/proxy_parse.h"
#include "unit.h"

static egress_allowlist *al_of(const char *const *p)
{
	egress_allowlist *al = NULL;
	sbx_err *e = NULL;
	if (egress_allowlist_parse(p, &al, &e) < 0) {
		fprintf(stderr, "  %s\n", sbx_err_message(e));
		sbx_err_free(e);
		return NULL;
	}
	return al;
}

static const char *parse_err(const char *pat)
{
	static char buf[512];
	egress_rule r;
	sbx_err *e = NULL;
	if (egress_rule_parse(pat, &r, &e) == 0)
		return NULL;
	snprintf(buf, sizeof(buf), "%s", sbx_err_message(e));
	sbx_err_free(e);
	return buf;
}

TEST(rule_forms)
{
	egress_rule r;
	CHECK(egress_rule_parse("Example.COM.", &r, NULL) == 0);
	CHECK(r.kind == EGRESS_RULE_NAME && r.port == EGRESS_PORT_WEB);
	CHECK_STREQ(r.text, "example.com");
	CHECK(egress_rule_parse("*.example.com:8443", &r, NULL) == 0);
	CHECK(r.kind == EGRESS_RULE_WILDCARD && r.port == 8443);
	CHECK_STREQ(r.text, "*.example.com:8443");
	CHECK(egress_rule_parse("example.com:*", &r, NULL) == 0 && r.port == EGRESS_PORT_ANY);
	CHECK(egress_rule_parse("[::1]:8080", &r, NULL) == 0 && r.kind == EGRESS_RULE_IP6 && r.port == 8080);
	CHECK_STREQ(r.text, "[::1]:8080");
	CHECK(egress_rule_parse("2001:DB8::1", &r, NULL) == 0 && r.kind == EGRESS_RULE_IP6);
	CHECK_STREQ(r.text, "[2001:db8::1]");
	CHECK(egress_rule_parse("10.0.0.1:5432", &r, NULL) == 0 && r.kind == EGRESS_RULE_IP4);
	CHECK(egress_rule_parse("[::ffff:127.0.0.1]:80", &r, NULL) == 0 && r.kind == EGRESS_RULE_IP4);
	CHECK(egress_rule_parse("xn--bcher-kva.example", &r, NULL) == 0);
	CHECK(egress_rule_parse("localhost:3000", &r, NULL) == 0);
}

TEST(rule_rejects)
{
	CHECK(strstr(parse_err("*"), "too broad"));
	CHECK(strstr(parse_err("*:443"), "too broad"));
	CHECK(strstr(parse_err("*.com"), "too broad"));
	CHECK(strstr(parse_err("a.*.com"), "leading"));
	CHECK(strstr(parse_err("foo*.com"), "leading"));
	CHECK(strstr(parse_err("bücher.example"), "punycode"));
	CHECK(strstr(parse_err("example.com:0"), "port"));
	CHECK(strstr(parse_err("example.com:65536"), "port"));
	CHECK(strstr(parse_err("example.com:"), "port"));
	CHECK(strstr(parse_err("example.com:8o"), "port"));
	CHECK(strstr(parse_err("127.1"), "numeric"));
	CHECK(strstr(parse_err("0x7f000001"), "numeric"));
	CHECK(strstr(parse_err("-a.com"), "'-'"));
	CHECK(strstr(parse_err("a..com"), "empty label"));
	CHECK(strstr(parse_err("a_b.com"), "invalid character"));
	CHECK(strstr(parse_err("[not-ip]:80"), "IPv6"));
	CHECK(strstr(parse_err(""), "empty"));
	char big[400];
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	CHECK(strstr(parse_err(big), "longer"));
	char label[80];
	memset(label, 'a', 64);
	strcpy(label + 64, ".com");
	CHECK(strstr(parse_err(label), "63"));
}

TEST(check_names_and_wildcards)
{
	const char *p[] = {"example.com", "*.cdn.example.org", "api.test:8443", NULL};
	egress_allowlist *al = al_of(p);
	CHECK(al);
	const char *rule;
	CHECK(egress_check(al, "example.com", 443, &rule) == 1);
	CHECK_STREQ(rule, "example.com");
	CHECK(egress_check(al, "EXAMPLE.com.", 80, &rule) == 1);
	CHECK(egress_check(al, "example.com", 8080, &rule) == 0);
	CHECK(strstr(rule, "port"));
	CHECK(egress_check(al, "www.example.com", 443, &rule) == 0);
	CHECK_STREQ(rule, "no rule allows it");
	CHECK(egress_check(al, "a.cdn.example.org", 443, &rule) == 1);
	CHECK_STREQ(rule, "*.cdn.example.org");
	CHECK(egress_check(al, "x.y.cdn.example.org", 443, &rule) == 1);
	CHECK(egress_check(al, "cdn.example.org", 443, &rule) == 0); /* not the apex */
	CHECK(egress_check(al, "evilcdn.example.org", 443, &rule) == 0);
	CHECK(egress_check(al, "api.test", 8443, &rule) == 1);
	CHECK(egress_check(al, "api.test", 443, &rule) == 0);
	CHECK(egress_check(al, "example.com", 0, &rule) == -EINVAL);
	CHECK(egress_check(al, "exa mple.com", 443, &rule) == -EINVAL);
	CHECK(egress_check(al, "", 443, &rule) == -EINVAL);
	egress_allowlist_free(al);
}

TEST(check_ip_needs_ip_rule)
{
	const char *p[] = {"example.com:*", "127.0.0.1:8080", "[::1]", NULL};
	egress_allowlist *al = al_of(p);
	CHECK(al);
	const char *rule;
	/* a name rule never allows an IP literal */
	CHECK(egress_check(al, "93.184.216.34", 443, &rule) == 0);
	CHECK(strstr(rule, "IP rule"));
	CHECK(egress_check(al, "127.0.0.1", 8080, &rule) == 1);
	CHECK_STREQ(rule, "127.0.0.1:8080");
	CHECK(egress_check(al, "[::ffff:127.0.0.1]", 8080, &rule) == 1);
	CHECK(egress_check(al, "127.0.0.1", 8081, &rule) == 0);
	CHECK(egress_check(al, "[::1]", 443, &rule) == 1);
	CHECK(egress_check(al, "::1", 80, &rule) == 1);
	CHECK(egress_check(al, "127.1", 8080, &rule) == -EINVAL); /* numeric names are not names */
	egress_allowlist_free(al);
}

static struct sockaddr_storage sa(const char *ip, int port)
{
	struct sockaddr_storage s = {0};
	struct sockaddr_in *s4 = (struct sockaddr_in *)&s;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&s;
	if (inet_pton(AF_INET, ip, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)port);
	} else if (inet_pton(AF_INET6, ip, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)port);
	}
	return s;
}

TEST(ssrf_internal_addresses)
{
	const char *internal[] = {"127.0.0.1",	    "10.1.2.3",	       "172.16.0.1", "172.31.255.255",
				  "192.168.1.1",    "169.254.169.254", "100.64.0.1", "0.0.0.0",
				  "224.0.0.1",	    "255.255.255.255", "::1",	     "::",
				  "fe80::1",	    "fc00::1",	       "fd12::1",    "::ffff:10.0.0.1",
				  "64:ff9b::a00:1", "2002:a00:1::",    "ff02::1"};
	for (size_t i = 0; i < ARRAY_SIZE(internal); i++) {
		struct sockaddr_storage s = sa(internal[i], 80);
		if (!egress_addr_is_internal((struct sockaddr *)&s)) {
			fprintf(stderr, "  %s should be internal\n", internal[i]);
			CHECK(0);
		}
	}
	const char *pub[] = {"93.184.216.34", "8.8.8.8", "172.32.0.1", "2606:4700::1111", "2002:808:808::"};
	for (size_t i = 0; i < ARRAY_SIZE(pub); i++) {
		struct sockaddr_storage s = sa(pub[i], 80);
		if (egress_addr_is_internal((struct sockaddr *)&s)) {
			fprintf(stderr, "  %s should be public\n", pub[i]);
			CHECK(0);
		}
	}
	const char *p[] = {"allowed.test:*", "127.0.0.1:8080", NULL};
	egress_allowlist *al = al_of(p);
	CHECK(al);
	const char *rule;
	struct sockaddr_storage s = sa("127.0.0.1", 9000);
	CHECK(egress_check_addr(al, (struct sockaddr *)&s, &rule) == 0);
	CHECK(strstr(rule, "internal address"));
	s = sa("127.0.0.1", 8080);
	CHECK(egress_check_addr(al, (struct sockaddr *)&s, &rule) == 1);
	CHECK_STREQ(rule, "127.0.0.1:8080");
	s = sa("::ffff:127.0.0.1", 8080);
	CHECK(egress_check_addr(al, (struct sockaddr *)&s, &rule) == 1);
	s = sa("93.184.216.34", 443);
	CHECK(egress_check_addr(al, (struct sockaddr *)&s, &rule) == 1);
	egress_allowlist_free(al);
}

TEST(open_mode)
{
	const char *p[] = {"127.0.0.1:5432", NULL};
	egress_allowlist *al = NULL;
	CHECK(egress_allowlist_parse_open(p, &al, NULL) == 0);
	const char *rule;
	CHECK(egress_check(al, "anything.example", 22, &rule) == 1);
	CHECK_STREQ(rule, "network internet (every public host)");
	struct sockaddr_storage s = sa("10.0.0.1", 22);
	CHECK(egress_check_addr(al, (struct sockaddr *)&s, &rule) == 0); /* still no SSRF */
	s = sa("127.0.0.1", 5432);
	CHECK(egress_check_addr(al, (struct sockaddr *)&s, &rule) == 1);
	egress_allowlist_free(al);
}

TEST(allowlist_errors_name_index)
{
	const char *p[] = {"ok.example", "fine.example:443", "*", NULL};
	egress_allowlist *al = NULL;
	sbx_err *e = NULL;
	CHECK(egress_allowlist_parse(p, &al, &e) < 0);
	CHECK(strstr(sbx_err_message(e), "[2]: '*': '*' is too broad"));
	sbx_err_free(e);
	CHECK(egress_allowlist_parse(NULL, &al, NULL) == 0 && al->n == 0);
	const char *rule;
	CHECK(egress_check(al, "example.com", 443, &rule) == 0);
	egress_allowlist_free(al);
}

TEST(covers)
{
	egress_rule a, b;
#define COV(x, y)                                                                                            \
	(egress_rule_parse(x, &a, NULL) == 0 && egress_rule_parse(y, &b, NULL) == 0 &&                       \
	 egress_rule_covers(&a, &b))
	CHECK(COV("example.com", "example.com:443"));
	CHECK(!COV("example.com:443", "example.com"));
	CHECK(COV("example.com:*", "example.com:22"));
	CHECK(!COV("example.com", "example.com:22"));
	CHECK(COV("*.example.com", "a.example.com"));
	CHECK(COV("*.example.com", "*.a.example.com"));
	CHECK(!COV("*.example.com", "example.com"));
	CHECK(!COV("example.com", "*.example.com"));
	CHECK(COV("10.0.0.1:*", "10.0.0.1:80"));
	CHECK(!COV("10.0.0.1", "10.0.0.2"));
#undef COV
	/* Within network internet (every public host): names and public
	 * addresses, never an internal one. */
#define PUB(x) (egress_rule_parse(x, &a, NULL) == 0 && egress_rule_public(&a))
	CHECK(PUB("example.com:22") && PUB("*.example.com") && PUB("93.184.216.34:*") &&
	      PUB("[2606:4700::1]:443"));
	CHECK(!PUB("127.0.0.1") && !PUB("10.0.0.5:5432") && !PUB("169.254.169.254") && !PUB("[::1]:80") &&
	      !PUB("[fd00::1]") && !PUB("192.168.1.1:*"));
#undef PUB
}

TEST(request_parse_connect)
{
	proxy_request r;
	const char *req = "CONNECT Example.COM:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\nHELLO";
	CHECK(proxy_request_parse(req, strlen(req), &r, NULL) == 1);
	CHECK(r.kind == PROXY_REQ_CONNECT && r.port == 443);
	CHECK_STREQ(r.host, "example.com");
	CHECK(r.head_len == strlen(req) - 5);
	CHECK(proxy_request_parse(req, 20, &r, NULL) == 0);
	const char *v6 = "CONNECT [::1]:8080 HTTP/1.1\r\n\r\n";
	CHECK(proxy_request_parse(v6, strlen(v6), &r, NULL) == 1 && r.port == 8080);
	CHECK_STREQ(r.host, "::1");
	const char *noport = "CONNECT example.com HTTP/1.1\r\n\r\n";
	CHECK(proxy_request_parse(noport, strlen(noport), &r, NULL) == -EINVAL);
}

TEST(request_parse_http)
{
	proxy_request r;
	sbx_err *e = NULL;
	const char *req = "GET http://Example.com:8080/a?b=1 HTTP/1.1\r\nHost: example.com:8080\r\n"
			  "Proxy-Connection: keep-alive\r\nProxy-Authorization: x\r\nAccept: */*\r\n\r\n";
	CHECK(proxy_request_parse(req, strlen(req), &r, NULL) == 1);
	CHECK(r.kind == PROXY_REQ_HTTP && r.port == 8080);
	CHECK_STREQ(r.host, "example.com");
	CHECK(r.origin_head && strncmp(r.origin_head, "GET /a?b=1 HTTP/1.1\r\n", 21) == 0);
	CHECK(!strstr(r.origin_head, "Proxy-"));
	CHECK(strstr(r.origin_head, "Accept: */*\r\n"));
	CHECK(strstr(r.origin_head, "Connection: close\r\n\r\n"));
	proxy_request_done(&r);
	const char *nohost = "GET http://example.com HTTP/1.0\r\n\r\n";
	CHECK(proxy_request_parse(nohost, strlen(nohost), &r, NULL) == 1);
	CHECK(strstr(r.origin_head, "GET / HTTP/1.0\r\nHost: example.com\r\n"));
	proxy_request_done(&r);
	const char *mism = "GET http://allowed.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n";
	CHECK(proxy_request_parse(mism, strlen(mism), &r, &e) == -EPERM);
	CHECK(strstr(sbx_err_message(e), "disagrees"));
	sbx_err_free(e);
	const char *mport = "GET http://allowed.test/ HTTP/1.1\r\nHost: allowed.test:81\r\n\r\n";
	CHECK(proxy_request_parse(mport, strlen(mport), &r, NULL) == -EPERM);
	const char *two = "GET http://a.test/ HTTP/1.1\r\nHost: a.test\r\nHost: a.test\r\n\r\n";
	CHECK(proxy_request_parse(two, strlen(two), &r, NULL) == -EPERM);
	const char *userinfo = "GET http://a.test@b.test/ HTTP/1.1\r\n\r\n";
	CHECK(proxy_request_parse(userinfo, strlen(userinfo), &r, NULL) == -EINVAL);
	const char *origin = "GET / HTTP/1.1\r\nHost: a.test\r\n\r\n";
	CHECK(proxy_request_parse(origin, strlen(origin), &r, NULL) == -EINVAL);
	const char *https = "GET https://a.test/ HTTP/1.1\r\n\r\n";
	CHECK(proxy_request_parse(https, strlen(https), &r, NULL) == -EINVAL);
	const char *bare = "GET http://a.test/ HTTP/1.1\nHost: a.test\r\n\r\n";
	CHECK(proxy_request_parse(bare, strlen(bare), &r, NULL) == -EINVAL);
	const char *sp = "GET http://a.test/ HTTP/1.1\r\nHost : a.test\r\n\r\n";
	CHECK(proxy_request_parse(sp, strlen(sp), &r, NULL) == -EINVAL);
	char *big = malloc(PROXY_HEAD_MAX + 10);
	memset(big, 'a', PROXY_HEAD_MAX + 10);
	CHECK(proxy_request_parse(big, PROXY_HEAD_MAX + 10, &r, NULL) == -E2BIG);
	free(big);
}

/* A minimal TLS 1.2 ClientHello with an SNI extension, split into records of at most `rec` bytes. */
static size_t make_hello(uint8_t *out, const char *sni, size_t rec)
{
	uint8_t hs[512];
	size_t n = 0;
	hs[n++] = 1;
	n += 3; /* length later */
	hs[n++] = 3, hs[n++] = 3;
	memset(hs + n, 7, 32), n += 32;
	hs[n++] = 0;		  /* session id */
	hs[n++] = 0, hs[n++] = 2; /* cipher suites */
	hs[n++] = 0x13, hs[n++] = 1;
	hs[n++] = 1, hs[n++] = 0; /* compression */
	size_t sl = sni ? strlen(sni) : 0;
	size_t ext_len = sni ? 4 + 2 + 3 + sl : 0;
	hs[n++] = (uint8_t)(ext_len >> 8), hs[n++] = (uint8_t)ext_len;
	if (sni) {
		hs[n++] = 0, hs[n++] = 0;
		hs[n++] = (uint8_t)((5 + sl) >> 8), hs[n++] = (uint8_t)(5 + sl);
		hs[n++] = (uint8_t)((3 + sl) >> 8), hs[n++] = (uint8_t)(3 + sl);
		hs[n++] = 0;
		hs[n++] = (uint8_t)(sl >> 8), hs[n++] = (uint8_t)sl;
		memcpy(hs + n, sni, sl), n += sl;
	}
	size_t body = n - 4;
	hs[1] = (uint8_t)(body >> 16), hs[2] = (uint8_t)(body >> 8), hs[3] = (uint8_t)body;
	size_t o = 0;
	for (size_t off = 0; off < n; off += rec) {
		size_t k = n - off < rec ? n - off : rec;
		out[o++] = 0x16, out[o++] = 3, out[o++] = 1;
		out[o++] = (uint8_t)(k >> 8), out[o++] = (uint8_t)k;
		memcpy(out + o, hs + off, k), o += k;
	}
	return o;
}

TEST(tls_sni)
{
	uint8_t buf[2048];
	char name[300];
	size_t n = make_hello(buf, "Allowed.Test", 16384);
	CHECK(proxy_tls_sni(buf, n, name, sizeof(name)) == 1);
	CHECK_STREQ(name, "Allowed.Test");
	for (size_t k = 0; k < n; k++)
		CHECK(proxy_tls_sni(buf, k, name, sizeof(name)) == -EAGAIN);
	n = make_hello(buf, "split.test", 10); /* the handshake spread over many records */
	CHECK(proxy_tls_sni(buf, n, name, sizeof(name)) == 1);
	CHECK_STREQ(name, "split.test");
	n = make_hello(buf, NULL, 16384);
	CHECK(proxy_tls_sni(buf, n, name, sizeof(name)) == 0);
	CHECK(proxy_tls_sni((const uint8_t *)"GET / HTTP/1.1\r\n", 16, name, sizeof(name)) == -EINVAL);
	n = make_hello(buf, "x.test", 16384);
	buf[5] = 2; /* ServerHello */
	CHECK(proxy_tls_sni(buf, n, name, sizeof(name)) == -EINVAL);
}
