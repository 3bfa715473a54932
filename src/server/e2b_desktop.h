/* E2B's template `desktop` (docs/desktop.md): `@e2b/desktop` starts its
 * own X server and XFCE session inside the sandbox over commands.run and
 * then drives xdotool, scrot and xrandr, so the template is E2B's base
 * (the host template with E2B's user) on a host that has those programs.
 * This says whether it has them. */
#pragma once
#include <stddef.h>

#include "sbx.h"

/* 0 when every program @e2b/desktop runs is an executable in the host's
 * /usr/local/bin, /usr/bin or /bin (what the host template shows); else -1
 * with the missing ones named in buf ("Xvfb, startxfce4"). */
int e2b_desktop_missing(char *buf, size_t n);

/* What a new desktop sandbox needs beyond base, best effort (a failure
 * only leaves the stream without noVNC): @e2b/desktop's stream runs noVNC
 * from /opt/noVNC, where Debian's novnc package is /usr/share/novnc, so a
 * link from one to the other is made inside the sandbox (its own writable
 * layer; the host's /opt is untouched). Nothing without /usr/share/novnc. */
void e2b_desktop_setup(sbx_ctx *ctx, const char *id);
