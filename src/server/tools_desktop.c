/* The MCP tools of desktops (docs/desktop.md): environment_screenshot and
 * environment_input. The X server, its window manager, scrot and xdotool
 * all run inside the environment, as its user, behind its walls: each is
 * one sbx_env_exec (or sbx_process_start for the two that stay), argv only,
 * never a shell. Xvfb listens only on its socket in the environment's own
 * /tmp/.X11-unix (no TCP, no abstract socket), so nothing outside the
 * environment reaches the display. What actions become is pure
 * (desktop_input.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/desktop_input.h"
#include "server/tools_internal.h"
#include "util/dsse.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/macro.h"

#define DISPLAY_MAX 63
#define SCREEN_SIZE "1024x768x24"	    /* @e2b/desktop's default resolution */
#define SCREENSHOT_BYTES ((int64_t)4 << 20) /* base64: under TOOLS_RESULT_MAX */
#define STEP_TIMEOUT_MS 15000
#define START_WAIT_MS 10000

#define DISPLAY_PROP                                                                                         \
	"'display':{'type':'integer','minimum':0,'maximum':63,'description':'The X display number "          \
	"inside the environment (default 0). Started on first use (Xvfb " SCREEN_SIZE                        \
	" and a window manager) when none runs.'}"

const char tool_environment_screenshot_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id'],'properties':{" ENV_ID_PROP
    "," DISPLAY_PROP "}}";

const char tool_environment_screenshot_out[] =
    OUTPUT("'width':{'type':'integer'},'height':{'type':'integer'},'display':{'type':'integer'},"
	   "'size_bytes':{'type':'integer'}",
	   "'width','height'");

const char tool_environment_input_in[] =
    "{'type':'object','additionalProperties':false,'required':['environment_id','actions'],'properties':"
    "{" ENV_ID_PROP "," DISPLAY_PROP ",'actions':{'type':'array','minItems':1,'maxItems':64,'description':"
    "'Done in order, each once the one before has. Coordinates are pixels from the top left corner "
    "of the screen.','items':{'type':'object','required':['type'],'properties':{"
    "'type':{'type':'string','enum':['click','double_click','move','drag','scroll','type','key'],"
    "'description':'click and double_click (at x, y if given, else where the pointer is), move (to x, "
    "y), drag (press where the pointer is, move to x, y, release), scroll (at x, y if given; button "
    "up, down, left or right; amount wheel clicks), type (text), key (keys).'},"
    "'x':{'type':'integer','minimum':0,'maximum':32767},'y':{'type':'integer','minimum':0,'maximum':"
    "32767},'button':{'type':'string','enum':['left','middle','right','up','down'],'description':"
    "'left (default), middle or right; for scroll up or down (default down).'},"
    "'amount':{'type':'integer','minimum':1,'maximum':100,'description':'scroll: wheel clicks (default "
    "1).'},'text':{'type':'string','minLength':1,'maxLength':4096,'description':'type: the text, "
    "typed as a keyboard would (newline is Return).'},'keys':{'type':['string','array'],'description':"
    "'key: an X key name or combination (Return, Escape, ctrl+c, ctrl+shift+t, enter, page_down), or "
    "an array of them pressed one after the other.'}}}}}}";

const char tool_environment_input_out[] =
    OUTPUT("'performed':{'type':'integer'},'display':{'type':'integer'}", "'performed'");

/* Runs argv inside the environment with DISPLAY=:display and waits;
 * captures up to out_bytes of stdout. */
static int desk_exec(tool_call *c, const char *id, int display, const char *const *argv, int64_t out_bytes,
		     sbx_exec_result *res, sbx_err **err)
{
	char disp[32];
	snprintf(disp, sizeof(disp), "DISPLAY=:%d", display);
	const char *env[] = {disp, NULL};
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.argv = argv;
	o.env = env;
	o.capture = true;
	o.output_bytes = out_bytes;
	o.timeout_ms = STEP_TIMEOUT_MS;
	o.cancel_fd = c->cancel_fd;
	int r = sbx_env_exec(c->ctx, id, &o, res, err);
	if (r < 0 && sbx_err_code(*err) == SBX_E_NOT_FOUND && sbx_err_spawn_errno(*err) == ENOENT) {
		sbx_err_free(*err);
		*err = NULL;
		return err_set(
		    err, SBX_E_UNAVAILABLE, ENOENT,
		    "desktop: the environment has no %s (a desktop needs Xvfb, xdotool, scrot and "
		    "a window manager such as openbox: on Debian apt-get install xvfb xdotool scrot "
		    "openbox; sbx's scripts/deps.sh test installs them)",
		    argv[0]);
	}
	return r;
}

/* The display's size if an X server answers on it: 1, and *w, *h; 0 if
 * none does. */
static int display_geometry(tool_call *c, const char *id, int display, int *w, int *h, sbx_err **err)
{
	static const char *const argv[] = {"xdotool", "getdisplaygeometry", NULL};
	sbx_exec_result res = {0};
	if (desk_exec(c, id, display, argv, 4096, &res, err) < 0)
		return -1;
	int ok = res.exit_code == 0 && res.stdout_buf && sscanf(res.stdout_buf, "%d %d", w, h) == 2;
	sbx_exec_result_free(&res);
	return ok;
}

static int start_bg(tool_call *c, const char *id, int display, const char *const *argv, sbx_err **err)
{
	char disp[32];
	snprintf(disp, sizeof(disp), "DISPLAY=:%d", display);
	const char *env[] = {disp, NULL};
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.argv = argv;
	o.env = env;
	o.output_bytes = 64 << 10;
	json_t *j = NULL;
	int r = sbx_process_start(c->ctx, id, &o, &j, err);
	json_decref(j);
	return r;
}

/* Makes sure an X server runs on :display inside the environment, starting
 * Xvfb and a window manager when none does. Two calls racing both start
 * one; the second Xvfb finds the display's lock and exits. */
static int display_ensure(tool_call *c, const char *id, int display, int *w, int *h, sbx_err **err)
{
	int r = display_geometry(c, id, display, w, h, err);
	if (r != 0)
		return r < 0 ? -1 : 0;
	char disp[16];
	snprintf(disp, sizeof(disp), ":%d", display);
	/* -nolisten local: no abstract socket, which any process of the same
	 * network namespace could reach; only /tmp/.X11-unix/X<N> inside.
	 * -noreset: the pointer stays where xdotool left it between clients. */
	const char *const xvfb[] = {"Xvfb", disp,	 "-screen", "0",	SCREEN_SIZE, "-nolisten",
				    "tcp",  "-nolisten", "local",   "-noreset", NULL};
	if (start_bg(c, id, display, xvfb, err) < 0) {
		if (sbx_err_code(*err) == SBX_E_NOT_FOUND) {
			sbx_err_free(*err);
			*err = NULL;
			return err_set(err, SBX_E_UNAVAILABLE, ENOENT,
				       "desktop: the environment has no Xvfb (on Debian apt-get install xvfb "
				       "xdotool scrot openbox; sbx's scripts/deps.sh test installs them)");
		}
		return err_wrap(err, "desktop: start Xvfb on %s", disp);
	}
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		r = display_geometry(c, id, display, w, h, err);
		if (r < 0)
			return -1;
		if (r > 0)
			break;
		struct timespec now;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 > START_WAIT_MS)
			return err_set(
			    err, SBX_E_UNAVAILABLE, ETIMEDOUT,
			    "desktop: Xvfb did not answer on %s within %d s (environment_process_list "
			    "shows its output)",
			    disp, START_WAIT_MS / 1000);
		nanosleep(&(struct timespec){.tv_nsec = 100 * 1000000}, NULL);
	}
	/* A window manager gives windows focus and frames; without one the
	 * display still works, so its absence is not an error. */
	static const char *const wm[] = {"openbox", NULL};
	sbx_err *e = NULL;
	if (start_bg(c, id, display, wm, &e) < 0)
		sbx_err_free(e);
	return 0;
}

/* scrot's PNG, read back through a file in the environment's /tmp: scrot
 * opens "-" as /dev/stdout, which the pipe the library captures through
 * (made outside the environment's user namespace) refuses. */
static int screenshot_png(tool_call *c, const char *id, int display, char **ret_buf, size_t *ret_len,
			  sbx_err **err)
{
	unsigned char rnd[8];
	char path[64];
	if (getentropy(rnd, sizeof(rnd)) < 0)
		return err_set(err, SBX_E_INTERNAL, errno, "desktop: getentropy");
	snprintf(path, sizeof(path), "/tmp/.sbx-screenshot-%02x%02x%02x%02x%02x%02x%02x%02x.png", rnd[0],
		 rnd[1], rnd[2], rnd[3], rnd[4], rnd[5], rnd[6], rnd[7]);
	/* -o: overwrite; -p: draw the pointer too. */
	const char *const argv[] = {"scrot", "-o", "-p", path, NULL};
	sbx_exec_result res = {0};
	if (desk_exec(c, id, display, argv, 4096, &res, err) < 0)
		return err_wrap(err, "desktop: screenshot of :%d", display);
	int exit_code = res.exit_code;
	char why[201];
	snprintf(why, sizeof(why), "%s", res.stderr_buf ?: "");
	sbx_exec_result_free(&res);
	if (exit_code != 0)
		return err_set(err, SBX_E_INTERNAL, EIO, "desktop: scrot failed (exit %d): %s", exit_code,
			       why);
	sbx_fs_opts fo = SBX_FS_OPTS_INIT;
	_cleanup_close_ int fd = -1;
	int64_t size = 0;
	int r = sbx_env_file_open(c->ctx, id, path, &fo, &fd, &size, err);
	sbx_err *e = NULL;
	if (sbx_env_remove_path(c->ctx, id, path, &fo, &e) < 0)
		sbx_err_free(e); /* in the environment's /tmp: its own to clean */
	if (r < 0)
		return err_wrap(err, "desktop: read the screenshot");
	if (size > SCREENSHOT_BYTES)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, EFBIG, "desktop: the screenshot is over %lld bytes",
			       (long long)SCREENSHOT_BYTES);
	r = fd_read_all(fd, SCREENSHOT_BYTES, ret_buf, ret_len);
	if (r < 0)
		return err_set(err, SBX_E_INTERNAL, -r, "desktop: read the screenshot");
	return 0;
}

int tool_environment_screenshot(tool_call *c, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	if (tools_resolve_env(c, &id, err) < 0)
		return -1;
	int display = (int)json_int(c->args, "display", 0), w, h;
	if (display_ensure(c, id, display, &w, &h, err) < 0)
		return -1;
	_cleanup_free_ char *png = NULL;
	size_t len = 0;
	if (screenshot_png(c, id, display, &png, &len, err) < 0)
		return -1;
	uint32_t pw, ph;
	if (desktop_png_size(png, len, &pw, &ph) < 0)
		return err_set(err, SBX_E_INTERNAL, EPROTO, "desktop: scrot did not write a PNG");
	_cleanup_free_ char *b64 = dsse_b64_encode(png, len);
	/* png goes out as the image content item only (tool.content_only). */
	json_t *j = b64 ? json_pack("{s:i,s:i,s:i,s:I,s:s}", "width", (int)pw, "height", (int)ph, "display",
				    display, "size_bytes", (json_int_t)len, "png", b64)
			: NULL;
	if (!j)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	*ret = j;
	return 0;
}

json_t *tools_screenshot_image(const json_t *structured)
{
	json_t *png = json_object_get(structured, "png");
	if (!json_is_string(png))
		return json_array();
	return json_pack("[{s:s,s:O,s:s}]", "type", "image", "data", png, "mimeType", "image/png");
}

int tool_environment_input(tool_call *c, json_t **ret, sbx_err **err)
{
	json_t *actions = json_object_get(c->args, "actions");
	size_t n = json_array_size(actions);
	if (n == 0 || n > DESKTOP_ACTIONS_MAX)
		return tools_bad_params(c, "'actions' must hold 1 to %d actions", DESKTOP_ACTIONS_MAX);
	/* Every action checked before any runs: a refused one does nothing. */
	char ***argvs = calloc(n, sizeof(*argvs));
	if (!argvs)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	int r = 0;
	size_t i;
	for (i = 0; i < n && r == 0; i++) {
		_cleanup_free_ char *msg = NULL;
		r = desktop_action_argv(json_array_get(actions, i), &argvs[i], &msg);
		if (r == -1)
			r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "actions[%zu]: %s", i, msg);
		else if (r < 0)
			r = err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
	}
	_cleanup_free_ char *id = NULL;
	int display = (int)json_int(c->args, "display", 0), w, h;
	if (r == 0 && (tools_resolve_env(c, &id, err) < 0 || display_ensure(c, id, display, &w, &h, err) < 0))
		r = -1;
	size_t done = 0;
	for (i = 0; r == 0 && i < n; i++) {
		sbx_exec_result res = {0};
		if (desk_exec(c, id, display, (const char *const *)argvs[i], 4096, &res, err) < 0)
			r = err_wrap(err, "actions[%zu]", i);
		else if (res.exit_code != 0)
			r = err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				    "actions[%zu]: xdotool failed (exit %d; %zu done before it): %.200s", i,
				    res.exit_code, done, res.stderr_buf ?: "");
		else
			done++;
		sbx_exec_result_free(&res);
	}
	for (i = 0; i < n; i++)
		strv_free(argvs[i]);
	free(argvs);
	if (r < 0)
		return r;
	*ret = json_pack("{s:I,s:i}", "performed", (json_int_t)done, "display", display);
	return *ret ? 0 : err_set(err, SBX_E_INTERNAL, ENOMEM, "out of memory");
}
