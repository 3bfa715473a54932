#include "sbx.h"
#include "unit.h"

TEST(size_units)
{
	int64_t v;
	CHECK(sbx_parse_size("512m", &v, NULL) == 0 && v == 512LL << 20);
	CHECK(sbx_parse_size("2G", &v, NULL) == 0 && v == 2LL << 30);
	CHECK(sbx_parse_size("1.5k", &v, NULL) == 0 && v == 1536);
	CHECK(sbx_parse_size("100", &v, NULL) == 0 && v == 100);
	CHECK(sbx_parse_size("64MiB", &v, NULL) == 0 && v == 64LL << 20);
	CHECK(sbx_parse_size("1t", &v, NULL) == 0 && v == 1LL << 40);
}

TEST(size_rejects)
{
	int64_t v = 7;
	const char *bad[] = {"",   "-1", "m", "12x", " 5", "5 ", "1e9", "99999999999999999999t",
			     ".5", "5.", NULL};
	for (int i = 0; bad[i]; i++) {
		sbx_err *e = NULL;
		CHECK(sbx_parse_size(bad[i], &v, &e) < 0);
		CHECK(sbx_err_code(e) == SBX_E_INVALID_ARGUMENT);
		CHECK(strstr(sbx_err_message(e), "invalid size") != NULL);
		sbx_err_free(e);
	}
	CHECK(v == 7);
}

TEST(duration_units)
{
	int64_t v;
	CHECK(sbx_parse_duration("500ms", &v, NULL) == 0 && v == 500);
	CHECK(sbx_parse_duration("30s", &v, NULL) == 0 && v == 30000);
	CHECK(sbx_parse_duration("1.5s", &v, NULL) == 0 && v == 1500);
	CHECK(sbx_parse_duration("5m", &v, NULL) == 0 && v == 300000);
	CHECK(sbx_parse_duration("1h", &v, NULL) == 0 && v == 3600000);
	CHECK(sbx_parse_duration("250", &v, NULL) == 0 && v == 250);
}

TEST(duration_rejects)
{
	int64_t v;
	const char *bad[] = {"", "s", "-5s", "5x", "5 s", "1e3", "9999999999999999d", NULL};
	for (int i = 0; bad[i]; i++)
		CHECK(sbx_parse_duration(bad[i], &v, NULL) < 0);
	/* Too long is said as such, not as a missing unit. */
	sbx_err *e = NULL;
	CHECK(sbx_parse_duration("99999999d", &v, &e) < 0 && strstr(sbx_err_message(e), "too long"));
	sbx_err_free(e);
	e = NULL;
	CHECK(sbx_parse_duration("abc", &v, &e) < 0 && strstr(sbx_err_message(e), "milliseconds"));
	sbx_err_free(e);
}

TEST(volume_specs)
{
	char *h, *p;
	bool ro;
	CHECK(sbx_parse_volume("/src:/work", &h, &p, &ro, NULL) == 0);
	CHECK_STREQ(h, "/src");
	CHECK_STREQ(p, "/work");
	CHECK(!ro);
	free(h), free(p);
	CHECK(sbx_parse_volume("/a/b:/c:ro", &h, &p, &ro, NULL) == 0 && ro);
	free(h), free(p);
	CHECK(sbx_parse_volume("/a:/c:rw", &h, &p, &ro, NULL) == 0 && !ro);
	free(h), free(p);
	const char *bad[] = {"", "/a", "a:/b", "/a:b", "/a:/b:rx", "/a:/../etc", "/a:/x/..", ":/b", NULL};
	for (int i = 0; bad[i]; i++)
		CHECK(sbx_parse_volume(bad[i], &h, &p, &ro, NULL) < 0);
}

TEST(error_codes_named)
{
	CHECK_STREQ(sbx_code_name(SBX_E_NOT_FOUND), "not_found");
	CHECK_STREQ(sbx_code_name(SBX_E_INVALID_ARGUMENT), "invalid_argument");
	CHECK_STREQ(sbx_code_name(SBX_E_LIMIT_EXCEEDED), "limit_exceeded");
	CHECK_STREQ(sbx_code_name(SBX_E_CONFLICT), "conflict");
	CHECK_STREQ(sbx_code_name(SBX_E_UNAVAILABLE), "unavailable");
	CHECK_STREQ(sbx_code_name(SBX_E_INTERNAL), "internal");
}

TEST(publish_specs)
{
	sbx_port_map m;
	CHECK(sbx_parse_publish("8080:80", &m, NULL) == 0);
	CHECK_STREQ(m.host_ip, "127.0.0.1"); /* loopback unless asked */
	CHECK(m.host_port == 8080 && m.port == 80);
	CHECK(sbx_parse_publish("0:8000", &m, NULL) == 0 && m.host_port == 0 && m.port == 8000);
	CHECK(sbx_parse_publish("0.0.0.0:9000:9000", &m, NULL) == 0);
	CHECK_STREQ(m.host_ip, "0.0.0.0");
	CHECK(sbx_parse_publish("127.0.0.1::8000", &m, NULL) == 0 && m.host_port == 0);
	CHECK(sbx_parse_publish("[::1]:8080:80", &m, NULL) == 0 && m.host_port == 8080);
	CHECK_STREQ(m.host_ip, "::1");
	CHECK(sbx_parse_publish("[0:0::1]:1:65535", &m, NULL) == 0 && m.port == 65535);
	CHECK_STREQ(m.host_ip, "::1"); /* canonical, so that duplicates compare equal */
	const char *bad[] = {"",
			     "80",
			     "8080:0",
			     "65536:80",
			     "1:65536",
			     "-1:80",
			     "+1:80",
			     "8080:80x",
			     " 1:80",
			     "a:1:80",
			     "localhost:1:80",
			     "1.2.3:1:80",
			     "::1:8080:80",
			     "[::1]8080:80",
			     "[1.2.3.4]:1:80",
			     "1:2:3:4",
			     ":80",
			     "1:",
			     "999999:80",
			     NULL};
	for (int i = 0; bad[i]; i++) {
		sbx_err *e = NULL;
		CHECK(sbx_parse_publish(bad[i], &m, &e) < 0);
		CHECK(sbx_err_code(e) == SBX_E_INVALID_ARGUMENT);
		sbx_err_free(e);
	}
	CHECK(sbx_parse_publish(NULL, &m, NULL) < 0);
}
