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
