/* The pure header checks every HTTP route family uses
 * (src/server/http_parse.h). */
#include <string.h>

#include "server/http_parse.h"
#include "unit.h"

TEST(origin_local_only)
{
	CHECK(http_origin_local("http://localhost"));
	CHECK(http_origin_local("http://localhost:3000"));
	CHECK(http_origin_local("HTTPS://127.0.0.1:65535"));
	CHECK(http_origin_local("http://[::1]:8080"));
	CHECK(!http_origin_local("http://localhost.evil.com"));
	CHECK(!http_origin_local("http://127.0.0.1.nip.io"));
	CHECK(!http_origin_local("http://localhost:"));
	CHECK(!http_origin_local("http://localhost:123456"));
	CHECK(!http_origin_local("http://localhost:80x"));
	CHECK(!http_origin_local("file://localhost"));
	CHECK(!http_origin_local("null"));
	CHECK(!http_origin_local(""));
}

TEST(content_type_and_accept)
{
	CHECK(http_content_type_is("application/json", "application/json"));
	CHECK(http_content_type_is("Application/JSON; charset=utf-8", "application/json"));
	CHECK(!http_content_type_is("application/jsonx", "application/json"));
	CHECK(!http_content_type_is("text/plain", "application/json"));
	CHECK(http_accepts("application/json, text/event-stream", "text/event-stream"));
	CHECK(!http_accepts("application/json", "text/event-stream"));
	CHECK(!http_accepts(NULL, "text/event-stream"));
}

TEST(token_equal_whole_token_only)
{
	CHECK(http_token_equal("s3cret", 6, "s3cret", 6));
	CHECK(!http_token_equal("s3cre", 5, "s3cret", 6));   /* a prefix */
	CHECK(!http_token_equal("s3cretX", 7, "s3cret", 6)); /* longer */
	CHECK(!http_token_equal("s3crex", 6, "s3cret", 6));
	CHECK(!http_token_equal("", 0, "s3cret", 6));
	/* A short given token repeated to the expected length is no match. */
	CHECK(!http_token_equal("ab", 2, "ababab", 6));
}

TEST(bearer_token)
{
	const char *t = NULL;
	size_t n = 0;
	CHECK(http_bearer_token("Bearer abc", &t, &n));
	CHECK(n == 3 && strncmp(t, "abc", 3) == 0);
	CHECK(http_bearer_token("bearer   abc  ", &t, &n));
	CHECK(n == 3 && strncmp(t, "abc", 3) == 0);
	CHECK(http_bearer_token("Bearer ", &t, &n));
	CHECK(n == 0);
	CHECK(!http_bearer_token("Basic abc", &t, &n));
	CHECK(!http_bearer_token("Bearerabc", &t, &n));
	CHECK(!http_bearer_token(NULL, &t, &n));
}

TEST(framing_refuses_what_two_parsers_could_read_apart)
{
	const char *why = NULL;
	http_framing ok = {0};
	CHECK(http_framing_check(&ok, &why) == 0); /* no body */
	http_framing cl = {.n_content_length = 1, .content_length = "42"};
	CHECK(http_framing_check(&cl, &why) == 0);
	http_framing ows = {.n_content_length = 1, .content_length = " 42\t"};
	CHECK(http_framing_check(&ows, &why) == 0);
	http_framing te = {.n_transfer_encoding = 1, .transfer_encoding = " Chunked "};
	CHECK(http_framing_check(&te, &why) == 0);
	http_framing two = {.n_content_length = 2, .content_length = "42"};
	CHECK(http_framing_check(&two, &why) == 400);
	CHECK(strstr(why, "more than one Content-Length") != NULL);
	http_framing both = {1, 1, "5", "chunked"};
	CHECK(http_framing_check(&both, &why) == 400);
	CHECK(strstr(why, "both") != NULL);
	const char *bad_cl[] = {"", " ", "+5", "-1", "5 5", "0x10", "5,5", "9999999999999999999"};
	for (size_t i = 0; i < sizeof(bad_cl) / sizeof(*bad_cl); i++) {
		http_framing b = {.n_content_length = 1, .content_length = bad_cl[i]};
		CHECK(http_framing_check(&b, &why) == 400);
	}
	const char *bad_te[] = {"gzip", "gzip, chunked", "chunked, gzip", "chunkedx", "identity", ""};
	for (size_t i = 0; i < sizeof(bad_te) / sizeof(*bad_te); i++) {
		http_framing b = {.n_transfer_encoding = 1, .transfer_encoding = bad_te[i]};
		CHECK(http_framing_check(&b, &why) == 501);
	}
	http_framing te2 = {.n_transfer_encoding = 2, .transfer_encoding = "chunked"};
	CHECK(http_framing_check(&te2, &why) == 501);
}
