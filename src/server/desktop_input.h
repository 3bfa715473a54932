/* Desktops (docs/desktop.md): what environment_input's actions become, and
 * the size a screenshot claims. Pure: no I/O, no environment; unit-tested
 * (tests/unit/test_desktop_input.c) and fuzzed (tests/fuzz/fuzz_desktop.c).
 *
 * An action is an object {type, x?, y?, button?, text?, keys?, amount?}
 * that becomes one xdotool argv, run inside the environment without a shell:
 *   click         [mousemove --sync X Y] click BUTTON
 *   double_click  [mousemove --sync X Y] click --repeat 2 BUTTON
 *   move          mousemove --sync X Y
 *   drag          mousedown BUTTON mousemove --sync X Y mouseup BUTTON
 *                 (from where the pointer is to X Y: move there first)
 *   scroll        [mousemove --sync X Y] click --repeat AMOUNT 4|5|6|7
 *                 (button "up" (default), "down", "left", "right")
 *   type          type --delay 12 -- TEXT
 *   key           key -- COMBO...  (keys: "ctrl+c" or ["ctrl+l", "Return"])
 * Refused (-1 and *ret_msg, malloc'd, naming the field and what it must
 * be): an unknown type or field, x without y, a coordinate that is not an
 * integer in 0..DESKTOP_COORD_MAX, a button not of the type's set, text
 * that is empty, longer than DESKTOP_TEXT_MAX bytes or holds a NUL or a
 * control character other than tab and newline, a key combo outside
 * [A-Za-z0-9_+] (so never an option, a shell metacharacter or a space),
 * longer than DESKTOP_KEY_MAX or more than DESKTOP_KEYS_MAX of them. The
 * common names clients send (enter, esc, ctrl, page_down, ...) become X
 * keysyms as @e2b/desktop maps them; others pass as they are. */
#pragma once
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define DESKTOP_COORD_MAX 32767
#define DESKTOP_TEXT_MAX 4096
#define DESKTOP_KEY_MAX 64
#define DESKTOP_KEYS_MAX 16
#define DESKTOP_ACTIONS_MAX 64
#define DESKTOP_AMOUNT_MAX 100

/* One action -> a NULL-terminated argv starting "xdotool" (malloc'd, free
 * with strv_free). Returns 0, -1 (refused: *ret_msg) or -ENOMEM. */
int desktop_action_argv(const json_t *action, char ***ret_argv, char **ret_msg);

/* The width and height in a PNG's IHDR. Returns 0, or -1 when buf is not a
 * PNG (signature, IHDR first, sizes 1..2^31-1). */
int desktop_png_size(const void *buf, size_t n, uint32_t *ret_width, uint32_t *ret_height);
