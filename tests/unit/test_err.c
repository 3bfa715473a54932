/* Unit tests: src/util/err.c (messages). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "unit.h"
#include "util/err.h"
#include "util/macro.h"

/* A message quoting megabytes of input (an MCP argument) is cut in its
 * middle: what failed and why stay, and it is still valid UTF-8 (a reply
 * carrying it could not be sent otherwise). */
TEST(long_messages_are_cut_in_the_middle)
{
	size_t n = 3 << 20;
	char *big = malloc(n + 1);
	CHECK(big);
	for (size_t i = 0; i < n; i += 2)
		memcpy(big + i, "\xc3\xa9", 2); /* é, so that any cut could split one */
	big[n] = 0;
	sbx_err *e = NULL;
	err_set(&e, SBX_E_NOT_FOUND, ENOENT, "no such snapshot: '%s'", big);
	const char *m = sbx_err_message(e);
	CHECK(strlen(m) <= 8192 + 64);
	CHECK(!strncmp(m, "no such snapshot: '\xc3\xa9", 21));
	CHECK(m[strlen(m) - 1] == '\'');
	CHECK(strstr(m, "bytes left out"));
	json_t *j = json_string(m); /* NULL for invalid UTF-8 */
	CHECK(j);
	json_decref(j);
	err_wrap(&e, "fork '%s'", big);
	m = sbx_err_message(e);
	CHECK(strlen(m) <= 8192 + 64 && !strncmp(m, "fork '", 6));
	j = json_string(m);
	CHECK(j);
	json_decref(j);
	sbx_err_free(e);
	free(big);
}

TEST(short_messages_are_whole)
{
	sbx_err *e = NULL;
	err_errnum(&e, ENOENT, "open '%s'", "/x");
	CHECK(!strcmp(sbx_err_message(e), "open '/x': No such file or directory"));
	sbx_err_free(e);
}
