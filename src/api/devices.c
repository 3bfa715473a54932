/* CDI devices at create: load the specs, resolve the requested names, check
 * every edit against the host before anything starts (a missing node or an
 * unsupported mount is a create error, not a half-built environment).
 * Applying them is the runtime's (runtime/devices.h). */
#include "api/devices.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "runtime/cdi.h"
#include "runtime/devices.h"
#include "util/json.h"
#include "util/macro.h"

static int check_node(cdi_node *n, sbx_err **err)
{
	struct stat st;
	if (stat(n->host_path, &st) < 0)
		return err_set(err, errno == ENOENT ? SBX_E_NOT_FOUND : SBX_E_UNAVAILABLE, errno,
			       "device node '%s': host node '%s': %s (sbx binds host nodes and never creates "
			       "them: mknod "
			       "is refused in a user namespace)",
			       n->path, n->host_path, strerror(errno));
	char type = S_ISCHR(st.st_mode) ? 'c' : S_ISBLK(st.st_mode) ? 'b' : S_ISFIFO(st.st_mode) ? 'p' : 0;
	if (!type)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "device node '%s': host '%s' is not a device", n->path, n->host_path);
	if (n->type && n->type != type)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "device node '%s': the spec says type %c, host '%s' is type %c", n->path,
			       n->type, n->host_path, type);
	long long maj = type == 'p' ? -1 : (long long)major(st.st_rdev),
		  min = type == 'p' ? -1 : (long long)minor(st.st_rdev);
	if ((n->major >= 0 && n->major != maj) || (n->minor >= 0 && n->minor != min))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "device node '%s': the spec says %lld:%lld, host '%s' is %lld:%lld", n->path,
			       (long long)n->major, (long long)n->minor, n->host_path, maj, min);
	n->type = type;
	n->major = maj;
	n->minor = min;
	return 0;
}

static int check_mount(const cdi_mount *m, sbx_err **err)
{
	bool bind = !m->type || streq(m->type, "bind") || streq(m->type, "none");
	static const char *const ok[] = {"ro",	   "rw",       "bind",	     "rbind",	 "nosuid",
					 "nodev",  "noexec",   "private",    "rprivate", "slave",
					 "rslave", "relatime", "norelatime", "noatime",	 NULL};
	for (char **o = m->options; o && *o; o++) {
		bool known = false;
		for (const char *const *k = ok; *k && !known; k++)
			known = streq(*k, *o);
		if (streq(*o, "bind") || streq(*o, "rbind"))
			bind = true;
		if (!known)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "CDI mount '%s': option '%s' is not supported (sbx applies ro, "
				       "noexec, rbind; nosuid "
				       "and nodev always)",
				       m->container_path, *o);
	}
	if (!bind)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "CDI mount '%s': type '%s' is not supported (only bind mounts)",
			       m->container_path, m->type);
	if (m->host_path[0] != '/')
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "CDI mount '%s': host path '%s' is not absolute", m->container_path,
			       m->host_path);
	struct stat st;
	if (stat(m->host_path, &st) < 0)
		return err_set(err, SBX_E_NOT_FOUND, errno, "CDI mount '%s': host path '%s': %s",
			       m->container_path, m->host_path, strerror(errno));
	return 0;
}

static int push_warning(env_config *c, const char *w)
{
	size_t n = 0;
	while (c->warnings && c->warnings[n])
		n++;
	char **v = realloc(c->warnings, (n + 2) * sizeof(char *));
	if (!v)
		return -ENOMEM;
	c->warnings = v;
	v[n] = strdup(w);
	v[n + 1] = NULL;
	return v[n] ? 0 : -ENOMEM;
}

int devices_prepare(sbx_ctx *ctx, env_config *c, const char *const *names, sbx_err **err)
{
	if (!names || !names[0])
		return 0;
	if (c->degraded)
		return err_set(err, SBX_E_UNAVAILABLE, EPERM,
			       "devices need user namespaces, which this host does not allow");
	cdi_spec **specs = NULL;
	size_t n = 0;
	const char *dirs = getenv("SBX_CDI_SPEC_DIRS");
	if (cdi_load_dirs(dirs, ctx->uid, &specs, &n, err) < 0)
		return err_wrap(err, "devices");
	_cleanup_free_ cdi_edits *e = calloc(1, sizeof(*e));
	_cleanup_strv_free_ char **resolved = NULL;
	int r = e ? cdi_resolve(specs, n, names, e, &resolved, err) : err_oom(err);
	cdi_specs_free(specs, n);
	if (r < 0)
		return err_wrap(err, "devices (specs from %s)", dirs && *dirs ? dirs : CDI_DEFAULT_DIRS);
	for (size_t i = 0; r == 0 && i < e->n_nodes; i++)
		r = check_node(&e->nodes[i], err);
	for (size_t i = 0; r == 0 && i < e->n_mounts; i++)
		r = check_mount(&e->mounts[i], err);
	for (size_t i = 0; r == 0 && i < e->n_hooks; i++)
		if (access(e->hooks[i].path, X_OK) < 0)
			r = err_set(err, SBX_E_NOT_FOUND, errno, "%s hook '%s': %s", e->hooks[i].name,
				    e->hooks[i].path, strerror(errno));
	if (r == 0 && e->n_gids && c->rootless)
		r = push_warning(
			c, "devices: rootless, additionalGids cannot be applied (setgroups is denied in the "
			   "user namespace)") < 0
			? err_oom(err)
			: 0;
	for (size_t i = 0; r == 0 && !c->rootless && i < e->n_gids; i++)
		if (e->gids[i] >= ENV_UID_COUNT)
			r = err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE,
				    "devices: additional gid %u is outside the environment's 0-65535",
				    e->gids[i]);
	if (r < 0) {
		cdi_edits_done(e);
		return err_wrap(err, "devices");
	}
	c->cdi = TAKE_PTR(e);
	c->devices = TAKE_PTR(resolved);
	return 0;
}

void devices_state(const env_config *c, json_t *st)
{
	if (st && c->devices)
		json_object_set_new(st, "devices", json_from_strv((const char *const *)c->devices));
}

int devices_env_apply(env_config *c, sbx_err **err)
{
	if (!c->cdi || !c->cdi->env)
		return 0;
	size_t n = 0, k = 0;
	while (c->env && c->env[n])
		n++;
	while (c->cdi->env[k])
		k++;
	char **v = realloc(c->env, (n + k + 1) * sizeof(char *));
	if (!v)
		return err_oom(err);
	c->env = v;
	for (size_t i = 0; i < k; i++)
		if (!(v[n + i] = strdup(c->cdi->env[i]))) {
			v[n + i] = NULL;
			return err_oom(err);
		}
	v[n + k] = NULL;
	return 0;
}

void devices_config_free(env_config *c)
{
	if (c->cdi) {
		cdi_edits_done(c->cdi);
		free(c->cdi);
		c->cdi = NULL;
	}
	strv_free(c->devices);
	c->devices = NULL;
}
