/* An image's configuration against a create's and an exec's options
 * (pure; the contract is image_config.h). */
#include "build/image_config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/macro.h"

static bool user_is_root(const char *u)
{
	return streq(u, "root") || streq(u, "0") || streq(u, "0:0") || streq(u, "root:root");
}

static size_t name_len(const char *kv)
{
	return strcspn(kv, "=");
}

int image_merge(const image_layer *const *layers, size_t n, image_merged *ret, sbx_err **err)
{
	size_t total = 0;
	for (size_t i = 0; i < n; i++)
		for (const char *const *e = layers[i] ? layers[i]->env : NULL; e && *e; e++)
			total++;
	const char **env = calloc(total + 1, sizeof(char *));
	if (!env)
		return err_errnum(err, ENOMEM, "image config");
	size_t k = 0;
	const char *cwd = NULL, *user = NULL;
	for (size_t i = 0; i < n; i++) {
		const image_layer *l = layers[i];
		if (!l)
			continue;
		for (const char *const *e = l->env; e && *e; e++) {
			size_t nl = name_len(*e);
			size_t j = 0;
			while (j < k && !(name_len(env[j]) == nl && !strncmp(env[j], *e, nl)))
				j++;
			env[j] = *e; /* a later layer's value in the earlier one's place */
			if (j == k)
				k++;
		}
		if (l->cwd)
			cwd = l->cwd;
		if (l->user && !(i == 0 && user_is_root(l->user)))
			user = l->user;
	}
	ret->env = (char **)env;
	ret->cwd = cwd;
	ret->user = user;
	return 0;
}

int image_config_text(const json_t *config, char **ret, sbx_err **err)
{
	*ret = NULL;
	if (!config || json_is_null(config))
		return 0;
	if (!json_is_object(config))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "image config: not an object");
	_cleanup_json_ json_t *c = json_object();
	if (!c)
		return err_errnum(err, ENOMEM, "image config");
	const char *k;
	json_t *v;
	json_object_foreach((json_t *)config, k, v)
	{
		if (json_is_null(v))
			continue;
		bool empty = false;
		if (streq(k, "Cmd") || streq(k, "Entrypoint")) {
			if (!json_is_strv(v))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "image config: %s must be an array of strings", k);
			empty = json_array_size(v) == 0;
		} else if (streq(k, "WorkingDir")) {
			if (!json_is_string(v) || (json_string_value(v)[0] && json_string_value(v)[0] != '/'))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "image config: WorkingDir must be an absolute path");
			empty = !json_string_value(v)[0];
		} else if (streq(k, "ExposedPorts") || streq(k, "Labels")) {
			const char *k2;
			json_t *v2;
			if (!json_is_object(v))
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
					       "image config: %s must be an object", k);
			json_object_foreach(v, k2, v2)
			{
				if (streq(k, "Labels") ? !json_is_string(v2) : !json_is_object(v2))
					return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
						       "image config: %s['%.100s'] has the wrong type", k,
						       k2);
			}
			empty = json_object_size(v) == 0;
		} else {
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "image config: unknown key '%.100s'", k);
		}
		if (!empty && json_object_set(c, k, v) < 0)
			return err_errnum(err, ENOMEM, "image config");
	}
	if (json_object_size(c) == 0)
		return 0;
	if (!(*ret = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS)))
		return err_errnum(err, ENOMEM, "image config");
	return 0;
}

const char *image_config_workdir(const json_t *config)
{
	const char *w = json_is_object(config) ? json_str(config, "WorkingDir") : NULL;
	return w && w[0] == '/' ? w : NULL;
}

static int push_all(char ***v, size_t *n, const json_t *a, sbx_err **err)
{
	size_t i;
	json_t *x;
	json_array_foreach(a, i, x)
	{
		if (!json_is_string(x) || strv_push_copy(v, n, json_string_value(x)) < 0)
			return err_errnum(err, ENOMEM, "image command");
	}
	return 0;
}

int image_command(const json_t *config, const char *const *argv, char ***ret, sbx_err **err)
{
	const json_t *ep = json_is_object(config) ? json_object_get(config, "Entrypoint") : NULL;
	const json_t *cmd = json_is_object(config) ? json_object_get(config, "Cmd") : NULL;
	if (!json_is_strv(ep))
		ep = NULL;
	if (!json_is_strv(cmd))
		cmd = NULL;
	bool have_argv = argv && argv[0];
	if (!have_argv && !json_array_size(ep) && !json_array_size(cmd))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "no command given, and the image has no CMD or ENTRYPOINT to run");
	_cleanup_strv_free_ char **v = calloc(1, sizeof(char *));
	size_t n = 0;
	if (!v)
		return err_errnum(err, ENOMEM, "image command");
	if (ep && push_all(&v, &n, ep, err) < 0)
		return -ENOMEM;
	if (have_argv) {
		for (const char *const *a = argv; *a; a++)
			if (strv_push_copy(&v, &n, *a) < 0)
				return err_errnum(err, ENOMEM, "image command");
	} else if (cmd && push_all(&v, &n, cmd, err) < 0) {
		return -ENOMEM;
	}
	*ret = TAKE_PTR(v);
	return 0;
}
