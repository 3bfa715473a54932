/* Whether the host can serve E2B's template `desktop` (e2b_desktop.h). */
#include "server/e2b_desktop.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "util/log.h"
#include "util/macro.h"

/* What @e2b/desktop 2.4.0 runs inside the sandbox (its dist/index.mjs):
 * the X server and its probe, the XFCE session it starts and waits for by
 * process name, and the tools of its screenshot, mouse, keyboard and
 * screen size calls. */
static const char *const programs[] = {"Xvfb",	    "xdpyinfo", "startxfce4", "xfce4-session", "xfwm4",
				       "xfdesktop", "xdotool",	"scrot",      "xrandr"};

int e2b_desktop_missing(char *buf, size_t n)
{
	static const char *const dirs[] = {"/usr/local/bin", "/usr/bin", "/bin"};
	size_t len = 0;
	if (n)
		buf[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(programs); i++) {
		bool found = false;
		for (size_t d = 0; d < ARRAY_SIZE(dirs) && !found; d++) {
			char path[64];
			snprintf(path, sizeof(path), "%s/%s", dirs[d], programs[i]);
			found = access(path, X_OK) == 0;
		}
		if (!found && len < n) {
			int w = snprintf(buf + len, n - len, "%s%s", len ? ", " : "", programs[i]);
			len += w > 0 ? (size_t)w : 0;
		}
	}
	return buf[0] ? -1 : 0;
}

void e2b_desktop_setup(sbx_ctx *ctx, const char *id)
{
	if (access("/usr/share/novnc/vnc.html", R_OK) < 0 || access("/opt/noVNC", F_OK) == 0)
		return;
	static const char *const argv[] = {"ln", "-sfn", "/usr/share/novnc", "/opt/noVNC", NULL};
	sbx_exec_opts o = SBX_EXEC_OPTS_INIT;
	o.argv = argv;
	o.user = "0";
	o.capture = true;
	o.timeout_ms = 10000;
	sbx_exec_result res = {0};
	sbx_err *e = NULL;
	if (sbx_env_exec(ctx, id, &o, &res, &e) < 0)
		log_debug("e2b desktop %s: link /opt/noVNC: %s", id, sbx_err_message(e));
	else if (res.exit_code != 0)
		log_debug("e2b desktop %s: link /opt/noVNC: exit %d", id, res.exit_code);
	sbx_err_free(e);
	sbx_exec_result_free(&res);
}
