/* environment_input's actions as xdotool argvs, and a PNG's size
 * (src/server/desktop_input.h). */
#include <errno.h>

#include "server/desktop_input.h"
#include "unit.h"
#include "util/macro.h"

/* The argv joined with '|', or "REFUSED: <message>". */
static char *map(const char *js)
{
	json_t *j = json_loads(js, 0, NULL);
	if (!j)
		abort();
	char **argv = NULL, *msg = NULL, *out = NULL;
	int r = desktop_action_argv(j, &argv, &msg);
	json_decref(j);
	if (r == -1) {
		if (asprintf(&out, "REFUSED: %s", msg) < 0)
			abort();
		free(msg);
		return out;
	}
	if (r < 0)
		abort();
	size_t n = 1;
	for (char **a = argv; *a; a++)
		n += strlen(*a) + 1;
	out = calloc(1, n);
	for (char **a = argv; *a; a++) {
		if (a != argv)
			strcat(out, "|");
		strcat(out, *a);
	}
	strv_free(argv);
	return out;
}

#define MAPS(js, want)                                                                                       \
	do {                                                                                                 \
		char *_m = map(js);                                                                          \
		CHECK_STREQ(_m, want);                                                                       \
		free(_m);                                                                                    \
	} while (0)
#define REFUSES(js, part)                                                                                    \
	do {                                                                                                 \
		char *_m = map(js);                                                                          \
		CHECK(strncmp(_m, "REFUSED: ", 9) == 0);                                                     \
		CHECK(strstr(_m, part) != NULL);                                                             \
		free(_m);                                                                                    \
	} while (0)

TEST(mouse_actions)
{
	MAPS("{\"type\":\"click\"}", "xdotool|click|1");
	MAPS("{\"type\":\"click\",\"x\":10,\"y\":20,\"button\":\"right\"}",
	     "xdotool|mousemove|--sync|10|20|click|3");
	MAPS("{\"type\":\"double_click\",\"x\":0,\"y\":0}",
	     "xdotool|mousemove|--sync|0|0|click|--repeat|2|1");
	MAPS("{\"type\":\"move\",\"x\":32767,\"y\":1}", "xdotool|mousemove|--sync|32767|1");
	MAPS("{\"type\":\"drag\",\"x\":5,\"y\":6}", "xdotool|mousedown|1|mousemove|--sync|5|6|mouseup|1");
	MAPS("{\"type\":\"scroll\"}", "xdotool|click|5");
	MAPS("{\"type\":\"scroll\",\"button\":\"up\",\"amount\":3,\"x\":1,\"y\":2}",
	     "xdotool|mousemove|--sync|1|2|click|--repeat|3|4");
}

TEST(keyboard_actions)
{
	MAPS("{\"type\":\"type\",\"text\":\"hi $(rm -rf /); `x`\\n\"}",
	     "xdotool|type|--delay|12|--|hi $(rm -rf /); `x`\n");
	MAPS("{\"type\":\"type\",\"text\":\"-v\"}", "xdotool|type|--delay|12|--|-v");
	MAPS("{\"type\":\"key\",\"keys\":\"Return\"}", "xdotool|key|--|Return");
	MAPS("{\"type\":\"key\",\"keys\":[\"ctrl+c\",\"enter\",\"PAGE_DOWN\",\"F5\"]}",
	     "xdotool|key|--|Control_L+c|Return|Page_Down|F5");
}

TEST(hostile_actions_refused)
{
	REFUSES("{\"type\":\"key\",\"keys\":\"a;rm -rf /\"}", "may hold only");
	REFUSES("{\"type\":\"key\",\"keys\":\"$(id)\"}", "may hold only");
	REFUSES("{\"type\":\"key\",\"keys\":\"-h\"}", "may hold only");
	REFUSES("{\"type\":\"key\",\"keys\":\"ctrl++\"}", "'+' joins");
	REFUSES("{\"type\":\"key\",\"keys\":[]}", "1 to 16");
	REFUSES("{\"type\":\"key\",\"keys\":7}", "each key");
	REFUSES("{\"type\":\"key\"}", "needs 'keys'");
	REFUSES("{\"type\":\"move\",\"x\":-1,\"y\":0}", "integer from 0 to 32767");
	REFUSES("{\"type\":\"move\",\"x\":1,\"y\":99999999999}", "integer from 0 to 32767");
	REFUSES("{\"type\":\"move\",\"x\":1.5,\"y\":1}", "integer");
	REFUSES("{\"type\":\"move\",\"x\":\"1\",\"y\":1}", "integer");
	REFUSES("{\"type\":\"move\"}", "needs both");
	REFUSES("{\"type\":\"click\",\"x\":1}", "both or neither");
	REFUSES("{\"type\":\"click\",\"button\":\"up\"}", "left, middle or right");
	REFUSES("{\"type\":\"scroll\",\"amount\":0}", "from 1 to 100");
	REFUSES("{\"type\":\"launch\"}", "unknown action type 'launch'");
	REFUSES("{\"x\":1}", "needs 'type'");
	REFUSES("[]", "must be an object");
	REFUSES("{\"type\":\"click\",\"text\":\"a\"}", "takes no 'text'");
	REFUSES("{\"type\":\"click\",\"command\":\"sh\"}", "unknown field 'command'");
	REFUSES("{\"type\":\"type\",\"text\":\"\"}", "1 to 4096 bytes");
	REFUSES("{\"type\":\"type\",\"text\":\"a\\u001bb\"}", "control character 0x1b");
	/* text one byte over the bound */
	char *big = malloc(DESKTOP_TEXT_MAX + 64);
	strcpy(big, "{\"type\":\"type\",\"text\":\"");
	size_t o = strlen(big);
	memset(big + o, 'a', DESKTOP_TEXT_MAX + 1);
	strcpy(big + o + DESKTOP_TEXT_MAX + 1, "\"}");
	REFUSES(big, "1 to 4096 bytes");
	big[o + DESKTOP_TEXT_MAX] = '"';
	big[o + DESKTOP_TEXT_MAX + 1] = '}';
	big[o + DESKTOP_TEXT_MAX + 2] = '\0';
	char *m = map(big);
	CHECK(strncmp(m, "xdotool|type", 12) == 0);
	free(m);
	free(big);
}

TEST(png_size)
{
	static const unsigned char png[] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n', 0, 0,
					    0,	  13,  'I', 'H', 'D',  'R',  0,	   0,	 4, 0,
					    0,	  0,   3,   0,	 8,    2,    0,	   0,	 0};
	uint32_t w = 0, h = 0;
	CHECK(desktop_png_size(png, sizeof(png), &w, &h) == 0);
	CHECK(w == 1024 && h == 768);
	CHECK(desktop_png_size(png, sizeof(png) - 1, &w, &h) == -1);
	unsigned char bad[sizeof(png)];
	memcpy(bad, png, sizeof(png));
	bad[1] = 'J';
	CHECK(desktop_png_size(bad, sizeof(bad), &w, &h) == -1);
	memcpy(bad, png, sizeof(png));
	memset(bad + 16, 0, 4); /* width 0 */
	CHECK(desktop_png_size(bad, sizeof(bad), &w, &h) == -1);
	CHECK(desktop_png_size(NULL, 0, &w, &h) == -1);
}
