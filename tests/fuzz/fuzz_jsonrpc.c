/* libFuzzer target: the JSON-RPC framing (src/server/jsonrpc.c) and the MCP
 * dispatcher (src/server/mcp.c, tools.c) on arbitrary input. Each input is
 * split into lines, as the stdio transport does, and fed to a fresh,
 * unthreaded server whose sbx_* calls are the stubs of mcp_stubs.h: no environment
 * is ever created. Checked: no crash, no leak (ASan), and every reply is one
 * line of valid JSON carrying "jsonrpc":"2.0", and no create passes an
 * argument the schema refuses (the stub aborts). Built and run by tests/fuzz/run. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/jsonrpc.h"
#include "server/mcp.h"
#include "util/err.h"

#include "mcp_stubs.h"

/* ---- the target -------------------------------------------------------------- */

static void sink_send(void *userdata, const json_t *msg)
{
	char *s = jsonrpc_dump(msg);
	if (!s)
		return;
	if (strchr(s, '\n'))
		abort(); /* would break the line framing */
	/* As the server reads: a string may hold U+0000 (an id echoed back). */
	json_t *back = json_loads(s, JSON_ALLOW_NUL, NULL);
	if (!back || !json_is_object(back) || !json_object_get(back, "jsonrpc"))
		abort();
	json_decref(back);
	free(s);
	++*(int *)userdata;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	mcp_server *s = NULL;
	if (mcp_server_new(NULL, false, &s, NULL) < 0)
		abort();
	int replies = 0;
	mcp_sink sink = {.send = sink_send, .userdata = &replies};
	const char *p = (const char *)data, *end = p + size;
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
		mcp_server_handle(s, p, len, &sink);
		/* The id of a line too large to parse: read within len only. */
		json_t *id = jsonrpc_peek_id(p, len);
		if (id && !json_is_integer(id) && !json_is_string(id))
			abort();
		json_decref(id);
		p += len + (nl ? 1 : 0);
	}
	mcp_server_wait(s);
	mcp_server_free(s);
	return 0;
}
