/* JSON-RPC 2.0 framing and validation (see jsonrpc.h). Pure: no I/O. */
#include "server/jsonrpc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/macro.h"

json_t *jsonrpc_result(const json_t *id, json_t *result)
{
	json_t *m = json_object();
	if (!m) {
		json_decref(result);
		return NULL;
	}
	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set_new(m, "id", id ? json_deep_copy(id) : json_null());
	json_object_set_new(m, "result", result ? result : json_object());
	return m;
}

json_t *jsonrpc_error(const json_t *id, int code, const char *message, json_t *data)
{
	json_t *e = json_object();
	json_t *m = json_object();
	if (!e || !m) {
		json_decref(e);
		json_decref(m);
		json_decref(data);
		return NULL;
	}
	json_object_set_new(e, "code", json_integer(code));
	/* The message may carry bytes from the peer: never let invalid UTF-8
	 * make the reply unsendable. */
	json_t *s = json_string(message ? message : "error");
	json_object_set_new(e, "message", s ? s : json_string("error (message not valid UTF-8)"));
	/* Invalid params is always the caller's invalid_argument: every plain
	 * method's failure carries data.code (API.md), whichever check refused. */
	if (!data && code == JSONRPC_INVALID_PARAMS)
		data = json_pack("{s:s}", "code", "invalid_argument");
	if (data)
		json_object_set_new(e, "data", data);
	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set_new(m, "id", id ? json_deep_copy(id) : json_null());
	json_object_set_new(m, "error", e);
	return m;
}

json_t *jsonrpc_errorf(const json_t *id, int code, json_t *data, const char *fmt, ...)
{
	char *msg = NULL;
	va_list ap;
	va_start(ap, fmt);
	int n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	json_t *m = jsonrpc_error(id, code, n >= 0 ? msg : "error", data);
	if (n >= 0)
		free(msg);
	return m;
}

json_t *jsonrpc_notification(const char *method, json_t *params)
{
	json_t *m = json_object();
	if (!m) {
		json_decref(params);
		return NULL;
	}
	json_object_set_new(m, "jsonrpc", json_string("2.0"));
	json_object_set_new(m, "method", json_string(method));
	if (params)
		json_object_set_new(m, "params", params);
	return m;
}

/* Past the string that starts at buf[i] ('"'): the index after its closing
 * quote, or len when it does not end within len. */
static size_t skip_string(const char *buf, size_t len, size_t i)
{
	for (i++; i < len; i++) {
		if (buf[i] == '\\')
			i++;
		else if (buf[i] == '"')
			return i + 1;
	}
	return len;
}

static size_t skip_ws(const char *buf, size_t len, size_t i)
{
	while (i < len && strchr(" \t\r\n", buf[i]) && buf[i])
		i++;
	return i;
}

/* Past the value that starts at buf[i]: its end, or len when it does not
 * end within len (a scalar ends at the first ',', '}', ']' or space). */
static size_t skip_value(const char *buf, size_t len, size_t i)
{
	if (i >= len)
		return len;
	if (buf[i] == '"')
		return skip_string(buf, len, i);
	if (buf[i] != '{' && buf[i] != '[') {
		while (i < len && buf[i] && !strchr(",}] \t\r\n", buf[i]))
			i++;
		return i < len ? i : len;
	}
	size_t depth = 0;
	while (i < len) {
		char c = buf[i];
		if (c == '"') {
			i = skip_string(buf, len, i);
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return i + 1;
		i++;
	}
	return len;
}

json_t *jsonrpc_peek_id(const char *buf, size_t len)
{
	size_t i = skip_ws(buf, len, 0);
	if (i >= len || buf[i] != '{')
		return NULL;
	i++;
	for (;;) {
		i = skip_ws(buf, len, i);
		if (i >= len || buf[i] != '"')
			return NULL; /* the end of the object, or not an object */
		size_t key = i + 1, after = skip_string(buf, len, i);
		if (after >= len)
			return NULL;
		bool is_id = after - key == 3 && !memcmp(buf + key, "id\"", 3);
		i = skip_ws(buf, len, after);
		if (i >= len || buf[i] != ':')
			return NULL;
		size_t v = skip_ws(buf, len, i + 1), end = skip_value(buf, len, v);
		if (end >= len)
			return NULL; /* cut within the value: nothing after it can be read */
		if (is_id) {
			if (end - v > 258)
				return NULL;
			json_t *id = json_loadb(buf + v, end - v, JSON_DECODE_ANY, NULL);
			if (json_is_integer(id) || json_is_string(id))
				return id;
			json_decref(id);
			return NULL;
		}
		i = skip_ws(buf, len, end);
		if (i >= len || buf[i] != ',')
			return NULL;
		i++;
	}
}

json_t *jsonrpc_too_large(size_t len, const json_t *id)
{
	return jsonrpc_errorf(
	    id, JSONRPC_INVALID_REQUEST, NULL,
	    "message too large: %zu bytes or more; the limit is %zu bytes (send large file content "
	    "in several smaller writes)",
	    len, JSONRPC_MAX_MESSAGE);
}

char *jsonrpc_dump(const json_t *msg)
{
	/* JSON_COMPACT never emits a raw newline: strings escape it. */
	return json_dumps(msg, JSON_COMPACT | JSON_PRESERVE_ORDER);
}

/* The id of a message jansson refused for its content rather than its
 * form (invalid UTF-8 in a string, a number out of range), or NULL: parsed
 * again with every non-ASCII byte made '?' (such bytes can only be inside
 * strings) and numbers read as reals; only an id that survives that intact
 * is used (an ASCII string, or an integer a double holds exactly). */
static json_t *salvage_id(const char *buf, size_t len)
{
	_cleanup_free_ char *copy = malloc(len + 1);
	if (!copy)
		return NULL;
	for (size_t i = 0; i < len; i++)
		copy[i] = (unsigned char)buf[i] >= 0x80 ? '?' : buf[i];
	json_error_t je;
	_cleanup_json_ json_t *j =
	    json_loadb(copy, len, JSON_REJECT_DUPLICATES | JSON_DECODE_INT_AS_REAL | JSON_ALLOW_NUL, &je);
	json_t *id = json_object_get(j, "id");
	if (json_is_real(id)) {
		double d = json_real_value(id);
		if (d >= -9007199254740992.0 && d <= 9007199254740992.0 && d == (double)(json_int_t)d)
			return json_integer((json_int_t)d);
		return NULL;
	}
	if (!json_is_string(id) || strchr(json_string_value(id), '?'))
		return NULL; /* '?' may stand for bytes we replaced */
	return json_incref(id);
}

int jsonrpc_parse(const char *buf, size_t len, json_t **ret, json_t **ret_error)
{
	*ret = NULL;
	*ret_error = NULL;
	if (len > JSONRPC_MAX_MESSAGE) {
		_cleanup_json_ json_t *id = jsonrpc_peek_id(buf, len);
		*ret_error = jsonrpc_too_large(len, id);
		return JSONRPC_INVALID_REQUEST;
	}
	size_t i = 0;
	while (i < len && buf[i] && strchr(" \t\r\n", buf[i]))
		i++;
	if (i == len)
		return 1;
	json_error_t je;
	/* Trailing garbage is a parse error (no JSON_DISABLE_EOF_CHECK). \u0000
	 * in a string is valid JSON and accepted: where a C string cannot carry
	 * it (methods, names, paths, argv, env) the field is refused by name
	 * (jsonrpc_classify, mcp.c, tools_validate); file content and stdin keep
	 * it as bytes (json_string_length). */
	json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
	if (!j) {
		/* Answer with the request's id when it can be read: a client waits
		 * for the reply to its id (the SDKs time out after a minute on an
		 * id-less one). */
		_cleanup_json_ json_t *id = salvage_id(buf + i, len - i);
		bool range = strstr(je.text, "too big") || strstr(je.text, "overflow");
		if (range && id) {
			*ret_error = jsonrpc_errorf(
			    id, JSONRPC_INVALID_PARAMS, NULL,
			    "invalid params: %s at line %d column %d (an integer must lie within -2^63 .. "
			    "2^63-1; see the field's minimum and maximum in tools/list)",
			    je.text, je.line, je.column);
			return JSONRPC_PARSE_ERROR;
		}
		*ret_error =
		    jsonrpc_errorf(id, JSONRPC_PARSE_ERROR, NULL,
				   "parse error: %s at line %d column %d; send one JSON-RPC 2.0 object "
				   "per line",
				   je.text, je.line, je.column);
		return JSONRPC_PARSE_ERROR;
	}
	if (json_is_array(j)) {
		json_decref(j);
		*ret_error =
		    jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST,
				  "JSON-RPC batches are not supported (MCP 2025-06-18 removed them): send "
				  "one message per line",
				  NULL);
		return JSONRPC_INVALID_REQUEST;
	}
	if (!json_is_object(j)) {
		json_decref(j);
		*ret_error = jsonrpc_error(NULL, JSONRPC_INVALID_REQUEST,
					   "invalid request: a JSON-RPC message must be a JSON object", NULL);
		return JSONRPC_INVALID_REQUEST;
	}
	*ret = j;
	return 0;
}

static bool id_valid(const json_t *id)
{
	return json_is_string(id) || json_is_integer(id);
}

int jsonrpc_classify(json_t *msg, jsonrpc_msg *ret, json_t **ret_error)
{
	*ret_error = NULL;
	json_t *id = json_object_get(msg, "id");
	json_t *method = json_object_get(msg, "method");
	json_t *params = json_object_get(msg, "params");
	const json_t *reply_id = id_valid(id) ? id : NULL;
	const char *why = NULL;

	if (!json_is_object(msg))
		why = "a JSON-RPC message must be a JSON object";
	else if (!json_is_string(json_object_get(msg, "jsonrpc")) ||
		 !streq(json_string_value(json_object_get(msg, "jsonrpc")), "2.0"))
		why = "\"jsonrpc\" must be the string \"2.0\"";
	else if (!method) {
		/* A response to a request we sent. */
		json_t *result = json_object_get(msg, "result"), *error = json_object_get(msg, "error");
		if (!id_valid(id) || (!result == !error) || (error && !json_is_object(error)))
			return JSONRPC_INVALID_REQUEST; /* never answer a reply */
		*ret = (jsonrpc_msg){.kind = JSONRPC_RESPONSE, .id = id};
		return 0;
	} else if (!json_is_string(method))
		why = "\"method\" must be a string";
	else if (strlen(json_string_value(method)) != json_string_length(method))
		why = "\"method\" must not contain NUL (\\u0000)";
	else if (id && !id_valid(id))
		why = "\"id\" must be a string or an integer";
	else if (params && !json_is_object(params) && !json_is_array(params))
		why = "\"params\" must be an object or an array";
	if (why) {
		*ret_error =
		    jsonrpc_errorf(reply_id, JSONRPC_INVALID_REQUEST, NULL, "invalid request: %s", why);
		return JSONRPC_INVALID_REQUEST;
	}
	*ret = (jsonrpc_msg){
	    .kind = id ? JSONRPC_REQUEST : JSONRPC_NOTIFICATION,
	    .method = json_string_value(method),
	    .id = id,
	    .params = params,
	};
	return 0;
}
