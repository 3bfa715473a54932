/* JSON-RPC 2.0 framing and validation: pure functions, no I/O.
 *
 * The transports hand each received message (one line on stdio, one body on
 * HTTP) to jsonrpc_parse(), then classify each message with
 * jsonrpc_classify(); replies are built with jsonrpc_result() and
 * jsonrpc_error(). Nothing here blocks, allocates beyond jansson objects, or
 * keeps state, so it can be unit-tested and fuzzed in isolation. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

/* Largest message accepted; longer ones get JSONRPC_INVALID_REQUEST. */
#define JSONRPC_MAX_MESSAGE ((size_t)4 << 20)

enum {
	JSONRPC_PARSE_ERROR = -32700,
	JSONRPC_INVALID_REQUEST = -32600,
	JSONRPC_METHOD_NOT_FOUND = -32601,
	JSONRPC_INVALID_PARAMS = -32602,
	JSONRPC_INTERNAL_ERROR = -32603,
	/* Implementation-defined server errors (-32000..-32099). */
	JSONRPC_SERVER_NOT_INITIALIZED = -32002,
	JSONRPC_TOOL_FAILED = -32000, /* a dotted method whose sbx call failed; data.code says why */
};

typedef enum jsonrpc_kind {
	JSONRPC_REQUEST,      /* method + id: needs exactly one response */
	JSONRPC_NOTIFICATION, /* method, no id: never answered */
	JSONRPC_RESPONSE,     /* result or error + id: a reply to something we sent */
} jsonrpc_kind;

/* One classified message. Every pointer borrows from the message object
 * passed to jsonrpc_classify() and lives as long as it does. */
typedef struct jsonrpc_msg {
	jsonrpc_kind kind;
	const char *method; /* requests and notifications */
	json_t *id;	    /* requests and responses: a string or integer */
	json_t *params;	    /* object or array, or NULL when absent */
} jsonrpc_msg;

/* Parses one message of len bytes (need not be NUL-terminated). On success
 * returns 0 and the decoded value in *ret: a JSON object (one message).
 * On failure returns a negative JSON-RPC code and, in *ret_error, the error
 * response to send (id null): -32700 for text that is not JSON, -32600 for
 * JSON that is not an object (batches included: MCP 2025-06-18 dropped
 * them) or a message over JSONRPC_MAX_MESSAGE. Whitespace-only input
 * returns 1 with nothing set (blank lines are ignored). */
int jsonrpc_parse(const char *buf, size_t len, json_t **ret, json_t **ret_error);

/* Validates one decoded message. Returns 0 and fills *ret on success. On
 * failure returns JSONRPC_INVALID_REQUEST and, in *ret_error, the error
 * response to send (with the message's id when it had a usable one), or
 * NULL when nothing may be sent (an invalid response: replying to a reply
 * could loop). */
int jsonrpc_classify(json_t *msg, jsonrpc_msg *ret, json_t **ret_error);

/* {"jsonrpc":"2.0","id":id,"result":result}; steals result; id is copied
 * (NULL means null). Returns NULL only on ENOMEM. */
json_t *jsonrpc_result(const json_t *id, json_t *result);
/* {"jsonrpc":"2.0","id":id,"error":{"code","message","data"?}}; steals data
 * (may be NULL). */
json_t *jsonrpc_error(const json_t *id, int code, const char *message, json_t *data);
/* Same with a printf-style message. */
json_t *jsonrpc_errorf(const json_t *id, int code, json_t *data, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* {"jsonrpc":"2.0","method":method,"params":params}; steals params (may be NULL). */
json_t *jsonrpc_notification(const char *method, json_t *params);
/* The error for a message of len bytes that exceeds JSONRPC_MAX_MESSAGE
 * (used by transports that stop reading an oversized line early), with id
 * (jsonrpc_peek_id; NULL: null). */
json_t *jsonrpc_too_large(size_t len, const json_t *id);
/* The "id" of a request from the first len bytes of its text, for a message
 * too large to parse (a client waits for the reply to its id): the
 * top-level object's "id" member if it comes whole within those bytes and is
 * an integer or a string of at most 256 bytes; NULL otherwise. Never reads
 * past len. Pure (fuzzed by tests/fuzz/fuzz_jsonrpc.c). */
json_t *jsonrpc_peek_id(const char *buf, size_t len);
/* Serializes a message for the wire: compact, one line, no trailing
 * newline. Returns NULL on ENOMEM. */
char *jsonrpc_dump(const json_t *msg);
