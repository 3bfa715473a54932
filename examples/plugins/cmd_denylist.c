/* cmd_denylist: an sbx plugin that refuses commands by program name.
 *
 *   {"plugins": [{"path": "/usr/lib/sbx/plugins/cmd_denylist.so",
 *                 "config": {"deny": ["rm", "dd", "mkfs", "nc"],
 *                            "message": "ask a human to do this"}}]}
 *
 * A command is refused when the base name of its program (argv[0]) is on the
 * list, and also when it is a shell's `-c` script whose first word is
 * (`sh -c 'rm -rf build'`). With no "deny" in the config the list is read
 * from the host variable SBX_CMD_DENYLIST (comma-separated) when sbx starts
 * the environment.
 *
 * This is a guardrail for an agent's habits, not a security boundary: a
 * program can still run another one itself (a script, `find -exec`, `xargs`,
 * a second command after `;` in a shell script). The walls around the
 * environment (namespaces, seccomp, Landlock, limits) are the boundary.
 *
 * Build: cc -shared -fPIC -O2 -Iinclude -o cmd_denylist.so cmd_denylist.c -ljansson */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "sbx_plugin.h"

#define MAX_NAMES 256

typedef struct denylist {
	char *names[MAX_NAMES];
	size_t n;
	char message[256];
} denylist;

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

static int add(denylist *d, const char *name, size_t len, char *errbuf, size_t errlen)
{
	while (len && (*name == ' ' || *name == '\t'))
		name++, len--;
	while (len && (name[len - 1] == ' ' || name[len - 1] == '\t'))
		len--;
	if (!len)
		return 0;
	if (d->n == MAX_NAMES) {
		snprintf(errbuf, errlen, "more than %d names on the deny list", MAX_NAMES);
		return -1;
	}
	if (memchr(name, '/', len)) {
		snprintf(errbuf, errlen, "'%.*s': list program names, not paths", (int)len, name);
		return -1;
	}
	if (!(d->names[d->n] = strndup(name, len)))
		return -1;
	d->n++;
	return 0;
}

static void fini(void *ctx)
{
	denylist *d = ctx;
	for (size_t i = 0; d && i < d->n; i++)
		free(d->names[i]);
	free(d);
}

static int init(const char *config, void **ctx, char *errbuf, size_t errlen)
{
	denylist *d = calloc(1, sizeof(*d));
	if (!d)
		return -1;
	snprintf(d->message, sizeof(d->message), "%s", "it is on this environment's deny list");
	json_error_t je;
	json_t *cfg = json_loads(config, JSON_DECODE_ANY, &je), *deny = json_object_get(cfg, "deny");
	int r = -1;
	if (!cfg || !(json_is_object(cfg) || json_is_null(cfg))) {
		snprintf(errbuf, errlen, "config must be an object {\"deny\": [names], \"message\": text}");
		goto out;
	}
	if (json_string_value(json_object_get(cfg, "message")))
		snprintf(d->message, sizeof(d->message), "%s",
			 json_string_value(json_object_get(cfg, "message")));
	if (deny) {
		size_t i;
		json_t *e;
		if (!json_is_array(deny)) {
			snprintf(errbuf, errlen, "config.deny must be an array of program names");
			goto out;
		}
		json_array_foreach(deny, i, e)
		{
			const char *s = json_string_value(e);
			if (!s) {
				snprintf(errbuf, errlen, "config.deny[%zu] must be a string", i);
				goto out;
			}
			if (add(d, s, strlen(s), errbuf, errlen) < 0)
				goto out;
		}
	} else {
		const char *env = getenv("SBX_CMD_DENYLIST");
		for (const char *p = env; p && *p;) {
			size_t len = strcspn(p, ",");
			if (add(d, p, len, errbuf, errlen) < 0)
				goto out;
			p += len + (p[len] == ',');
		}
	}
	*ctx = d;
	d = NULL;
	r = 0;
out:
	json_decref(cfg);
	fini(d);
	return r;
}

static const char *denied(const denylist *d, const char *prog, size_t len)
{
	for (size_t i = 0; i < d->n; i++)
		if (strlen(d->names[i]) == len && memcmp(d->names[i], prog, len) == 0)
			return d->names[i];
	return NULL;
}

static int on_exec(void *ctx, const sbx_plugin_exec *info, sbx_plugin_verdict *out)
{
	const denylist *d = ctx;
	const char *prog = base_name(info->argv[0]);
	const char *hit = denied(d, prog, strlen(prog));
	static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ash", "ksh", NULL};
	for (size_t i = 0; !hit && shells[i]; i++) {
		if (strcmp(prog, shells[i]) != 0)
			continue;
		/* sh -c SCRIPT: the script's first word */
		for (size_t a = 1; info->argv[a] && info->argv[a + 1]; a++)
			if (strcmp(info->argv[a], "-c") == 0) {
				const char *s = info->argv[a + 1] + strspn(info->argv[a + 1], " \t\n");
				size_t len = strcspn(s, " \t\n;&|<>()");
				const char *w = s;
				for (const char *q = s; q < s + len; q++)
					if (*q == '/')
						w = q + 1;
				hit = denied(d, w, len - (size_t)(w - s));
				break;
			}
	}
	if (hit)
		sbx_plugin_deny(out, "'%s' is refused: %s", hit, d->message);
	return 0;
}

static const struct sbx_plugin plugin = {
    .abi_version = SBX_PLUGIN_ABI_VERSION,
    .size = sizeof(struct sbx_plugin),
    .name = "cmd_denylist",
    .description = "refuses commands whose program is on a deny list",
    .init = init,
    .fini = fini,
    .on_exec = on_exec,
};
SBX_PLUGIN_DEFINE(plugin)
