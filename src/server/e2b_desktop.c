/* Whether the host can serve E2B's template `desktop` (e2b_desktop.h). */
#include "server/e2b_desktop.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

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
