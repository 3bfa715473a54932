/* libFuzzer target: environment_input's actions as xdotool argvs and a
 * screenshot's PNG header (pure, src/server/desktop_input.h). The input is
 * one action as a JSON document, and also raw bytes for the PNG reader.
 * Whatever is accepted must be safe to exec: argv[0] xdotool, no element
 * empty or holding a NUL, coordinates in range, key combos of [A-Za-z0-9_+],
 * text within bounds and after "--". */
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/desktop_input.h"

static void check_argv(char **argv)
{
	if (!argv || !argv[0] || strcmp(argv[0], "xdotool") != 0 || !argv[1])
		abort();
	bool after_dashes = false;
	for (char **a = argv + 1; *a; a++) {
		if (!**a)
			abort();
		if (after_dashes && strcmp(argv[1], "key") == 0 &&
		    (*a)[strspn(*a, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_+")])
			abort();
		if (after_dashes && strcmp(argv[1], "type") == 0 && strlen(*a) > DESKTOP_TEXT_MAX)
			abort();
		if (!after_dashes && (*a)[0] == '-' && strcmp(*a, "--") != 0 && strcmp(*a, "--sync") != 0 &&
		    strcmp(*a, "--repeat") != 0 && strcmp(*a, "--delay") != 0)
			abort();
		if (!after_dashes && (*a)[0] >= '0' && (*a)[0] <= '9' && atol(*a) > DESKTOP_COORD_MAX)
			abort();
		if (strcmp(*a, "--") == 0)
			after_dashes = true;
	}
	/* type and key: what follows them is after "--" */
	if ((strcmp(argv[1], "type") == 0 || strcmp(argv[1], "key") == 0) && !after_dashes)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t w, h;
	if (desktop_png_size(data, size, &w, &h) == 0 && (w == 0 || h == 0))
		abort();
	json_t *j = json_loadb((const char *)data, size, 0, NULL);
	if (!j)
		return 0;
	char **argv = NULL, *msg = NULL;
	int r = desktop_action_argv(j, &argv, &msg);
	if (r == 0) {
		check_argv(argv);
		for (char **a = argv; *a; a++)
			free(*a);
		free(argv);
	} else if (r == -1) {
		if (!msg || !*msg)
			abort();
		free(msg);
	}
	json_decref(j);
	return 0;
}
