/* environment_input's actions as xdotool argvs; a PNG's size (see
 * desktop_input.h). */
#include "server/desktop_input.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/macro.h"

static int refuse(char **ret_msg, const char *fmt, ...) _printf_(2, 3);
static int refuse(char **ret_msg, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *m = NULL;
	int r = vasprintf(&m, fmt, ap);
	va_end(ap);
	if (r < 0)
		return -ENOMEM;
	*ret_msg = m;
	return -1;
}

enum { F_XY = 1, F_BUTTON = 2, F_TEXT = 4, F_KEYS = 8, F_AMOUNT = 16 };

static const struct {
	const char *type;
	unsigned allowed;
	bool needs_xy;
} types[] = {
    {"click", F_XY | F_BUTTON, false},
    {"double_click", F_XY | F_BUTTON, false},
    {"move", F_XY, true},
    {"drag", F_XY | F_BUTTON, true},
    {"scroll", F_XY | F_BUTTON | F_AMOUNT, false},
    {"type", F_TEXT, false},
    {"key", F_KEYS, false},
};

static const struct {
	const char *field;
	unsigned flag;
} fields[] = {{"x", F_XY},	{"y", F_XY},	  {"button", F_BUTTON},
	      {"text", F_TEXT}, {"keys", F_KEYS}, {"amount", F_AMOUNT}};

/* The names clients send for keys, as X keysyms (@e2b/desktop's table). */
static const char *const key_names[][2] = {
    {"enter", "Return"},
    {"return", "Return"},
    {"esc", "Escape"},
    {"escape", "Escape"},
    {"backspace", "BackSpace"},
    {"tab", "Tab"},
    {"space", "space"},
    {"delete", "Delete"},
    {"del", "Delete"},
    {"insert", "Insert"},
    {"up", "Up"},
    {"down", "Down"},
    {"left", "Left"},
    {"right", "Right"},
    {"home", "Home"},
    {"end", "End"},
    {"page_up", "Page_Up"},
    {"page_down", "Page_Down"},
    {"pageup", "Page_Up"},
    {"pagedown", "Page_Down"},
    {"ctrl", "Control_L"},
    {"control", "Control_L"},
    {"alt", "Alt_L"},
    {"shift", "Shift_L"},
    {"super", "Super_L"},
    {"cmd", "Super_L"},
    {"win", "Super_L"},
    {"meta", "Meta_L"},
    {"caps_lock", "Caps_Lock"},
    {"menu", "Menu"},
    {"print", "Print"},
    {"pause", "Pause"},
};

static int coord(const json_t *a, const char *k, long *ret, char **ret_msg)
{
	json_t *v = json_object_get(a, k);
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > DESKTOP_COORD_MAX)
		return refuse(ret_msg, "'%s' must be an integer from 0 to %d (pixels from the top left)", k,
			      DESKTOP_COORD_MAX);
	*ret = (long)json_integer_value(v);
	return 0;
}

/* "ctrl+c" -> "Control_L+c": each '+'-separated name mapped through
 * key_names; the combo already checked against [A-Za-z0-9_+]. */
static char *key_combo(const char *combo)
{
	size_t cap = strlen(combo) * 10 + 1, len = 0;
	char *out = malloc(cap);
	if (!out)
		return NULL;
	for (const char *p = combo;;) {
		size_t n = strcspn(p, "+");
		const char *name = p;
		size_t nn = n;
		for (size_t i = 0; i < ARRAY_SIZE(key_names); i++)
			if (strlen(key_names[i][0]) == n && strncasecmp(p, key_names[i][0], n) == 0) {
				name = key_names[i][1];
				nn = strlen(name);
				break;
			}
		memcpy(out + len, name, nn);
		len += nn;
		if (!p[n])
			break;
		out[len++] = '+';
		p += n + 1;
	}
	out[len] = '\0';
	return out;
}

static int key_ok(const json_t *v, char **ret_msg)
{
	const char *s = json_string_value(v);
	if (!s || !*s || strlen(s) > DESKTOP_KEY_MAX)
		return refuse(ret_msg, "each key must be a string of 1 to %d characters", DESKTOP_KEY_MAX);
	if (s[strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+")])
		return refuse(ret_msg,
			      "key '%.*s' may hold only letters, digits, '_' and '+' (an X keysym name "
			      "such as Return, or a combination such as ctrl+shift+t)",
			      DESKTOP_KEY_MAX, s);
	if (s[0] == '+' || s[strlen(s) - 1] == '+' || strstr(s, "++"))
		return refuse(ret_msg, "key '%s': '+' joins two key names", s);
	return 0;
}

static int text_ok(const json_t *v, char **ret_msg)
{
	const char *s = json_string_value(v);
	size_t n = json_string_length(v);
	if (!s || n == 0 || n > DESKTOP_TEXT_MAX)
		return refuse(ret_msg,
			      "'text' must be a string of 1 to %d bytes (split longer text into "
			      "several type actions)",
			      DESKTOP_TEXT_MAX);
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		if ((ch < 0x20 && ch != '\t' && ch != '\n') || ch == 0x7f)
			return refuse(ret_msg,
				      "'text' holds control character 0x%02x at byte %zu: only tab and "
				      "newline may be typed; use a key action for other keys",
				      ch, i);
	}
	return 0;
}

static int button_of(const json_t *a, bool scroll, const char **ret, char **ret_msg)
{
	json_t *v = json_object_get(a, "button");
	static const char *const mouse[][2] = {{"left", "1"}, {"middle", "2"}, {"right", "3"}};
	static const char *const wheel[][2] = {{"up", "4"}, {"down", "5"}, {"left", "6"}, {"right", "7"}};
	const char *const(*set)[2] = scroll ? wheel : mouse;
	size_t n = scroll ? ARRAY_SIZE(wheel) : ARRAY_SIZE(mouse);
	if (!v) {
		*ret = scroll ? "5" : "1";
		return 0;
	}
	const char *s = json_string_value(v);
	for (size_t i = 0; s && i < n; i++)
		if (streq(s, set[i][0])) {
			*ret = set[i][1];
			return 0;
		}
	return refuse(ret_msg, "'button' must be %s",
		      scroll ? "up, down, left or right" : "left, middle or right");
}

static int push(char ***v, size_t *n, const char *s)
{
	return strv_push_copy(v, n, s);
}

static int push_move(char ***v, size_t *n, long x, long y)
{
	char xs[16], ys[16];
	snprintf(xs, sizeof(xs), "%ld", x);
	snprintf(ys, sizeof(ys), "%ld", y);
	if (push(v, n, "mousemove") < 0 || push(v, n, "--sync") < 0 || push(v, n, xs) < 0 ||
	    push(v, n, ys) < 0)
		return -ENOMEM;
	return 0;
}

int desktop_action_argv(const json_t *a, char ***ret_argv, char **ret_msg)
{
	if (!json_is_object(a))
		return refuse(ret_msg, "an action must be an object {type, ...}");
	const char *type = json_string_value(json_object_get(a, "type"));
	if (!type)
		return refuse(ret_msg,
			      "an action needs 'type': click, double_click, move, drag, scroll, type "
			      "or key");
	size_t t = 0;
	while (t < ARRAY_SIZE(types) && !streq(types[t].type, type))
		t++;
	if (t == ARRAY_SIZE(types))
		return refuse(ret_msg,
			      "unknown action type '%.64s': click, double_click, move, drag, scroll, type or "
			      "key",
			      type);
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)a, k, v)
	{
		if (streq(k, "type"))
			continue;
		size_t f = 0;
		while (f < ARRAY_SIZE(fields) && !streq(fields[f].field, k))
			f++;
		if (f == ARRAY_SIZE(fields))
			return refuse(ret_msg, "unknown field '%.64s' in a %s action", k, type);
		if (!(types[t].allowed & fields[f].flag))
			return refuse(ret_msg, "a %s action takes no '%s'", type, k);
	}
	bool has_x = json_object_get(a, "x"), has_y = json_object_get(a, "y");
	if (has_x != has_y || (types[t].needs_xy && !has_x))
		return refuse(ret_msg, "a %s action needs %s 'x' and 'y'", type,
			      types[t].needs_xy ? "both" : "both or neither of");
	long x = 0, y = 0;
	if (has_x && (coord(a, "x", &x, ret_msg) < 0 || coord(a, "y", &y, ret_msg) < 0))
		return -1;

	_cleanup_strv_free_ char **argv = NULL;
	size_t n = 0;
	if (push(&argv, &n, "xdotool") < 0)
		return -ENOMEM;
	int r = 0;
	const char *button = NULL;
	if (streq(type, "click") || streq(type, "double_click") || streq(type, "scroll")) {
		bool scroll = streq(type, "scroll");
		if (button_of(a, scroll, &button, ret_msg) < 0)
			return -1;
		long amount = streq(type, "double_click") ? 2 : 1;
		if (scroll && json_object_get(a, "amount")) {
			json_t *am = json_object_get(a, "amount");
			if (!json_is_integer(am) || json_integer_value(am) < 1 ||
			    json_integer_value(am) > DESKTOP_AMOUNT_MAX)
				return refuse(ret_msg,
					      "'amount' must be an integer from 1 to %d (wheel clicks)",
					      DESKTOP_AMOUNT_MAX);
			amount = (long)json_integer_value(am);
		}
		char reps[16];
		snprintf(reps, sizeof(reps), "%ld", amount);
		if ((has_x && push_move(&argv, &n, x, y) < 0) || push(&argv, &n, "click") < 0 ||
		    (amount > 1 && (push(&argv, &n, "--repeat") < 0 || push(&argv, &n, reps) < 0)) ||
		    push(&argv, &n, button) < 0)
			return -ENOMEM;
	} else if (streq(type, "move")) {
		r = push_move(&argv, &n, x, y);
	} else if (streq(type, "drag")) {
		if (button_of(a, false, &button, ret_msg) < 0)
			return -1;
		r = push(&argv, &n, "mousedown") < 0 || push(&argv, &n, button) < 0 ||
			    push_move(&argv, &n, x, y) < 0 || push(&argv, &n, "mouseup") < 0 ||
			    push(&argv, &n, button) < 0
			? -ENOMEM
			: 0;
	} else if (streq(type, "type")) {
		json_t *text = json_object_get(a, "text");
		if (text_ok(text, ret_msg) < 0)
			return -1;
		r = push(&argv, &n, "type") < 0 || push(&argv, &n, "--delay") < 0 ||
			    push(&argv, &n, "12") < 0 || push(&argv, &n, "--") < 0 ||
			    push(&argv, &n, json_string_value(text)) < 0
			? -ENOMEM
			: 0;
	} else { /* key */
		json_t *keys = json_object_get(a, "keys");
		if (!keys)
			return refuse(ret_msg,
				      "a key action needs 'keys': a key such as Return or ctrl+c, or an "
				      "array of them pressed one after the other");
		if (json_is_array(keys) &&
		    (json_array_size(keys) == 0 || json_array_size(keys) > DESKTOP_KEYS_MAX))
			return refuse(ret_msg, "'keys' must hold 1 to %d keys", DESKTOP_KEYS_MAX);
		if (push(&argv, &n, "key") < 0 || push(&argv, &n, "--") < 0)
			return -ENOMEM;
		size_t nk = json_is_array(keys) ? json_array_size(keys) : 1;
		for (size_t i = 0; i < nk; i++) {
			json_t *key = json_is_array(keys) ? json_array_get(keys, i) : keys;
			if (key_ok(key, ret_msg) < 0)
				return -1;
			if (strv_push(&argv, &n, key_combo(json_string_value(key))) < 0)
				return -ENOMEM;
		}
	}
	if (r < 0)
		return r;
	*ret_argv = TAKE_PTR(argv);
	return 0;
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

int desktop_png_size(const void *buf, size_t n, uint32_t *ret_width, uint32_t *ret_height)
{
	static const unsigned char sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	const unsigned char *p = buf;
	/* signature, then the first chunk: length 13, "IHDR", width, height */
	if (!p || n < 8 + 8 + 13 || memcmp(p, sig, 8) != 0 || be32(p + 8) != 13 ||
	    memcmp(p + 12, "IHDR", 4) != 0)
		return -1;
	uint32_t w = be32(p + 16), h = be32(p + 20);
	if (w == 0 || h == 0 || w > INT32_MAX || h > INT32_MAX)
		return -1;
	*ret_width = w;
	*ret_height = h;
	return 0;
}
