/* E2B's template `desktop` (docs/desktop.md): `@e2b/desktop` starts its
 * own X server and XFCE session inside the sandbox over commands.run and
 * then drives xdotool, scrot and xrandr, so the template is E2B's base
 * (the host template with E2B's user) on a host that has those programs.
 * This says whether it has them. */
#pragma once
#include <stddef.h>

/* 0 when every program @e2b/desktop runs is an executable in the host's
 * /usr/local/bin, /usr/bin or /bin (what the host template shows); else -1
 * with the missing ones named in buf ("Xvfb, startxfce4"). */
int e2b_desktop_missing(char *buf, size_t n);
