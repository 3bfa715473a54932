

/* sbx_build: templates from Dockerfiles (docs/build.md).
 *
 * A build walks the parsed Dockerfile (src/build/dockerfile.c) keeping a
 * chain key: key_0 = H("FROM" base), key_i = H(key_{i-1}, instruction text
 * after substitution, its inputs: the content digest of COPY sources, the
 * ARG values RUN sees). Steps that change files (RUN, COPY, ADD, WORKDIR)
 * end in a snapshot, remembered as the label ref "build-cache.<key hex>"
 * (a gc root); a later build reaching the same key takes that snapshot and
 * runs nothing. Metadata steps (ENV, ARG, USER, LABEL, SHELL, CMD,
 * ENTRYPOINT, EXPOSE) only change the key and the configuration.
 *
 * The live environment a miss runs in is created lazily from the current
 * snapshot and kept while steps keep missing; a hit makes it stale. At the
 * end a manifest with the configuration (env, cwd, user, and the image
 * config: CMD, ENTRYPOINT, WORKDIR, EXPOSE, LABEL over the base's, see
 * build/image_config.h) over the last snapshot's layers becomes the
 * template; the build record <root>/builds/<hex>.json keeps the result's
 * config too (with SHELL). Nothing is tagged unless every step succeeded. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/build_internal.h"
#include "build/dockerfile.h"
#include "build/image_config.h"
#include "store/digest.h"
#include "store/oci.h"
#include "store/snapshot.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

#define CACHE_PREFIX "build-cache."
#define RUN_OUTPUT_TAIL 2048

static void build_done(build *b)
{
	if (b->env_id)
		(void)sbx_env_remove(b->ctx, b->env_id, NULL);
	free(b->env_id);
	free(b->base_spec);
	strv_free(b->env);
	strv_free(b->args);
	strv_free(b->ignore);
	free(b->workdir);
	free(b->user);
	json_decref(b->shell);
	json_decref(b->cmd);
	json_decref(b->entrypoint);
	json_decref(b->expose);
	json_decref(b->labels);
	json_decref(b->steps);
}

static int strv_set(char ***v, size_t *n, const char *kv)
{
	size_t kl = strcspn(kv, "=");
	for (size_t i = 0; i < *n; i++)
		if (!strncmp((*v)[i], kv, kl) && (*v)[i][kl] == '=') {
			char *d = strdup(kv);
			if (!d)
				return -ENOMEM;
			free((*v)[i]);
			(*v)[i] = d;
			return 0;
		}
	char **nv = realloc(*v, (*n + 2) * sizeof(char *));
	if (!nv)
		return -ENOMEM;
	*v = nv;
	if (!(nv[*n] = strdup(kv)))
		return -ENOMEM;
	nv[++*n] = NULL;
	return 0;
}

static int key_next(build *b, const char *text, const char *extra, sbx_err **err)
{
	_cleanup_free_ char *s = NULL;
	if (asprintf(&s, "%s\n%s\n%s", b->key, text, extra ? extra : "") < 0)
		return err_oom(err);
	return store_digest_buf(s, strlen(s), b->key, err);
}

static int cache_get(build *b, char ret[STORE_DIGEST_SIZE])
{
	if (b->o->no_cache)
		return -1;
	char label[128];
	snprintf(label, sizeof label, CACHE_PREFIX "%s", store_digest_hex(b->key));
	_cleanup_snapshot_ store_snapshot *s = NULL;
	if (store_ref_get(b->ctx->root, label, ret, NULL) < 0 ||
	    store_snapshot_read(b->ctx->root, ret, &s, NULL) < 0)
		return -1;
	return 0;
}

static int snap_step(build *b, sbx_err **err)
{
	_cleanup_(json_decrefp) json_t *j = NULL;
	if (sbx_env_snapshot(b->ctx, b->env_id, NULL, &j, err) < 0)
		return err_wrap(err, "snapshot");
	const char *id = json_str(j, "snapshot_id");
	if (!id || strlen(id) >= STORE_DIGEST_SIZE)
		return err_set(err, SBX_E_INTERNAL, EINVAL, "snapshot: no id");
	strcpy(b->cur, id);
	char label[128];
	snprintf(label, sizeof label, CACHE_PREFIX "%s", store_digest_hex(b->key));
	return store_ref_set(b->ctx->root, label, b->cur, err);
}

static json_t *argv_or_shell(build *b, const dockerfile_instr *in)
{
	if (in->argv)
		return json_from_strv((const char *const *)in->argv);
	json_t *a = json_deep_copy(b->shell);
	json_array_append_new(a, json_string(in->args));
	return a;
}

static int from_step(build *b, const dockerfile_instr *in, const char *arg, sbx_err **err)
{
	const char *spec = arg;
	char base[STORE_DIGEST_SIZE + 32];
	_cleanup_free_ char *digest = NULL;
	/* A server that allows clients only some host directories (MCP's
	 * --allow-host-dir) allows no other FROM dir:/oci: either. */
	if (b->ctx->host_dirs && (startswith(spec, "dir:") || startswith(spec, "oci:"))) {
		_cleanup_free_ char *hdir = NULL, *tag = NULL, *real = NULL;
		if (startswith(spec, "dir:"))
			hdir = strdup(spec + 4);
		else if (oci_ref_parse(spec, &hdir, &tag, NULL) < 0)
			hdir = NULL;
		if (!hdir || !(real = sbx_ctx_host_dir_allowed(b->ctx, hdir)))
			return err_set(
			    err, SBX_E_INVALID_ARGUMENT, EPERM,
			    "%s:%u: FROM %s: not in a host directory the operator allowed (sbx "
			    "mcp/serve --allow-host-dir DIR; symlinks and '..' are resolved first)",
			    b->name, in->line, spec);
	}
	if (streq(spec, "scratch")) {
		_cleanup_free_ char *dir = NULL;
		if (asprintf(&dir, "%s/build/scratch", b->ctx->root) < 0)
			return err_oom(err);
		if (fs_mkdir_p(dir, 0755) < 0)
			return err_errno(err, "scratch '%s'", dir);
		if (asprintf(&b->base_spec, "dir:%s", dir) < 0)
			return err_oom(err);
		snprintf(base, sizeof base, "scratch");
	} else if (streq(spec, "host") || startswith(spec, "dir:")) {
		if (!(b->base_spec = strdup(spec)))
			return err_oom(err);
		snprintf(base, sizeof base, "%.*s", (int)sizeof base - 1, spec);
	} else {
		sbx_err *e = NULL;
		if (sbx_template_resolve(b->ctx, spec, &digest, &e) < 0) {
			sbx_err_free(e);
			if (sbx_snapshot_resolve(b->ctx, spec, &digest, NULL) < 0)
				return err_set(err, SBX_E_NOT_FOUND, ENOENT,
					       "%s:%u: FROM %s: not a template (sbx template ls), snapshot, "
					       "oci:DIR[:TAG] or scratch",
					       b->name, in->line, spec);
		}
		strcpy(b->cur, digest);
		snprintf(base, sizeof base, "%s", digest);
		/* The base image's WORKDIR is where RUN and a relative COPY start
		 * (its ENV and USER come with the environment made from it). */
		_cleanup_snapshot_ store_snapshot *bs = NULL;
		if (store_snapshot_read(b->ctx->root, digest, &bs, err) < 0)
			return err_wrap(err, "%s:%u: FROM %s", b->name, in->line, spec);
		_cleanup_(json_decrefp) json_t *bc = bs->config ? json_loads(bs->config, 0, NULL) : NULL;
		const char *wd = image_config_workdir(bc);
		if (wd && !(b->workdir = strdup(wd)))
			return err_oom(err);
	}
	return key_next(b, "FROM", base, err);
}

static void report(build *b, json_t *step)
{
	if (b->o->on_step)
		b->o->on_step(b->o->userdata, step);
}

static int do_step(build *b, const dockerfile_instr *in, size_t idx, size_t total, sbx_err **err)
{
	int64_t t0 = now_ms_real();
	_cleanup_free_ char **vars = build_vars(b);
	if (!vars)
		return err_oom(err);
	_cleanup_free_ char *x = NULL;
	/* RUN, CMD, ENTRYPOINT and SHELL are not substituted (the shell does it). */
	bool subst =
	    in->kind != DF_RUN && in->kind != DF_CMD && in->kind != DF_ENTRYPOINT && in->kind != DF_SHELL;
	if (subst ? dockerfile_expand(in->args, (const char *const *)vars, b->escape, &x, err) < 0
		  : !(x = strdup(in->args)))
		return x ? err_wrap(err, "%s:%u", b->name, in->line) : (err_ret(err) ? -1 : err_oom(err));
	_cleanup_free_ char *text = NULL;
	if (asprintf(&text, "%s%s%s%s%s %s", in->keyword, in->chown ? " --chown=" : "",
		     in->chown ? in->chown : "", in->chmod ? " --chmod=" : "", in->chmod ? in->chmod : "",
		     x) < 0)
		return err_oom(err);
	_cleanup_(json_decrefp) json_t *step =
	    json_pack("{s:I,s:I,s:I,s:s,s:s}", "step", (json_int_t)idx + 1, "steps", (json_int_t)total,
		      "line", (json_int_t)in->line, "instruction", text, "state", "running");
	if (!step)
		return err_oom(err);
	report(b, step);
	bool fs_step = false, cached = false;
	_cleanup_free_ char *extra = NULL, *staging = NULL, *dest = NULL;
	_cleanup_strv_free_ char **pairs = NULL;
	switch (in->kind) {
	case DF_FROM:
		if (from_step(b, in, x, err) < 0)
			return -1;
		break;
	case DF_ARG: {
		_cleanup_free_ char *kv = NULL;
		const char *eq = strchr(x, '=');
		size_t kl = eq ? (size_t)(eq - x) : strlen(x);
		const char *given = NULL;
		for (size_t i = 0; b->o->build_args && b->o->build_args[i]; i++)
			if (!strncmp(b->o->build_args[i], x, kl) && b->o->build_args[i][kl] == '=')
				given = b->o->build_args[i] + kl + 1;
		if (asprintf(&kv, "%.*s=%s", (int)kl, x, given ? given : eq ? eq + 1 : "") < 0)
			return err_oom(err);
		if (strv_set(&b->args, &b->n_args, kv) < 0)
			return err_oom(err);
		if (key_next(b, text, kv, err) < 0)
			return -1;
		break;
	}
	case DF_ENV:
	case DF_LABEL:
		if (dockerfile_pairs(x, true, b->escape, &pairs, err) < 0)
			return err_wrap(err, "%s:%u: %s", b->name, in->line, in->keyword);
		for (char **p = pairs; *p; p++) {
			if (in->kind == DF_ENV) {
				if (strv_set(&b->env, &b->n_env, *p) < 0)
					return err_oom(err);
			} else {
				char *eq = strchr(*p, '=');
				*eq = 0;
				json_object_set_new(b->labels,
						    streq(in->keyword, "MAINTAINER") ? "maintainer" : *p,
						    json_string(eq + 1));
			}
		}
		if (key_next(b, text, NULL, err) < 0)
			return -1;
		break;
	case DF_USER:
		free(b->user);
		if (!(b->user = strdup(x)))
			return err_oom(err);
		if (key_next(b, text, NULL, err) < 0)
			return -1;
		break;
	case DF_SHELL:
		json_decref(b->shell);
		b->shell = json_from_strv((const char *const *)in->argv);
		if (key_next(b, text, NULL, err) < 0)
			return -1;
		break;
	case DF_CMD:
	case DF_ENTRYPOINT: {
		json_t **slot = in->kind == DF_CMD ? &b->cmd : &b->entrypoint;
		json_decref(*slot);
		*slot = argv_or_shell(b, in);
		if (key_next(b, text, NULL, err) < 0)
			return -1;
		break;
	}
	case DF_EXPOSE: {
		_cleanup_strv_free_ char **w = NULL;
		const char *p = x;
		while (*p) {
			size_t l = strcspn(p, " \t");
			if (l) {
				_cleanup_free_ char *port = strndup(p, l);
				char *end;
				long v = port ? strtol(port, &end, 10) : 0;
				if (!port || v < 1 || v > 65535 ||
				    (*end && strcmp(end, "/tcp") && strcmp(end, "/udp")))
					return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
						       "%s:%u: EXPOSE %s: expected PORT[/tcp|/udp]", b->name,
						       in->line, port ? port : "");
				json_array_append_new(b->expose, json_string(port));
			}
			p += l;
			p += strspn(p, " \t");
		}
		if (key_next(b, text, NULL, err) < 0)
			return -1;
		break;
	}
	case DF_WORKDIR: {
		_cleanup_free_ char *w = NULL;
		if (x[0] == '/')
			w = strdup(x);
		else if (asprintf(&w, "%s/%s", b->workdir ? b->workdir : "", x) < 0)
			w = NULL;
		if (!w)
			return err_oom(err);
		free(b->workdir);
		b->workdir = TAKE_PTR(w);
		fs_step = true;
		if (key_next(b, text, b->workdir, err) < 0)
			return -1;
		break;
	}
	case DF_COPY:
	case DF_ADD:
		if (build_step_copy(b, in, x, &extra, &staging, &dest, err) < 0)
			return -1;
		fs_step = true;
		if (key_next(b, text, extra, err) < 0)
			goto fail;
		break;
	case DF_RUN: {
		/* The ARG values RUN sees are part of its inputs. */
		_cleanup_free_ char *argstr = NULL;
		for (size_t i = 0; i < b->n_args; i++) {
			char *s2;
			if (asprintf(&s2, "%s%s\n", argstr ? argstr : "", b->args[i]) < 0)
				return err_oom(err);
			free(argstr);
			argstr = s2;
		}
		_cleanup_free_ char *sh = json_dumps(b->shell, JSON_COMPACT);
		_cleanup_free_ char *ex = NULL;
		if (asprintf(&ex, "%s%s", sh ? sh : "", argstr ? argstr : "") < 0)
			return err_oom(err);
		fs_step = true;
		if (key_next(b, text, ex, err) < 0)
			return -1;
		break;
	}
	}
	if (fs_step) {
		char hit[STORE_DIGEST_SIZE];
		if (cache_get(b, hit) == 0) {
			cached = true;
			if (strcmp(hit, b->cur))
				build_env_drop(b);
			strcpy(b->cur, hit);
			b->hits++;
		} else {
			b->misses++;
			if (build_env_ensure(b, err) < 0)
				goto fail;
			if (in->kind == DF_WORKDIR) {
				if (build_env_mkdir_p(b, b->workdir, err) < 0) {
					err_wrap(err, "%s:%u: WORKDIR", b->name, in->line);
					goto fail;
				}
			} else if (in->kind == DF_COPY || in->kind == DF_ADD) {
				if (build_env_put_tree(b, staging, dest, err) < 0) {
					err_wrap(err, "%s:%u: %s", b->name, in->line, in->keyword);
					goto fail;
				}
				if (in->chown) {
					/* Ownership: the tree's top entries, recursively, by the
					 * environment's chown. */
					_cleanup_strv_free_ char **names = NULL;
					size_t nn = 0;
					struct dirent **list = NULL;
					int cnt = scandir(staging, &list, NULL, alphasort);
					names = calloc((size_t)(cnt > 0 ? cnt : 0) + 4, sizeof(char *));
					if (names) {
						names[nn++] = strdup("chown");
						names[nn++] = strdup("-hR");
						names[nn++] = strdup(in->chown);
					}
					for (int i = 0; i < cnt; i++) {
						if (names && strcmp(list[i]->d_name, ".") &&
						    strcmp(list[i]->d_name, ".."))
							names[nn++] = fs_path_join(dest, list[i]->d_name);
						free(list[i]);
					}
					free(list);
					if (!names)
						goto oom;
					sbx_exec_result res = {0};
					if (build_run_argv(b, (const char *const *)names, NULL, &res, err) <
					    0) {
						err_wrap(err, "%s:%u: %s --chown (needs chown in the image)",
							 b->name, in->line, in->keyword);
						goto fail;
					}
					int ec = res.exit_code;
					sbx_exec_result_free(&res);
					if (ec != 0) {
						err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
							"%s:%u: %s --chown=%s failed (status %d)", b->name,
							in->line, in->keyword, in->chown, ec);
						goto fail;
					}
				}
			} else {
				_cleanup_(json_decrefp) json_t *av = argv_or_shell(b, in);
				_cleanup_strv_free_ char **argv = json_to_strv(av);
				if (!argv)
					goto oom;
				sbx_exec_result res = {0};
				if (build_run_argv(b, (const char *const *)argv, b->user, &res, err) < 0) {
					err_wrap(err, "%s:%u: RUN", b->name, in->line);
					goto fail;
				}
				if (res.exit_code != 0) {
					const char *tail = res.stderr_len   ? res.stderr_buf
							   : res.stdout_buf ? res.stdout_buf
									    : "";
					size_t tl = strlen(tail);
					if (tl > RUN_OUTPUT_TAIL)
						tail += tl - RUN_OUTPUT_TAIL;
					while (*tail && tail[strlen(tail) - 1] == '\n')
						((char *)tail)[strlen(tail) - 1] = 0;
					if (res.signal)
						err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
							"%s:%u: RUN %s: killed by signal %d%s%s", b->name,
							in->line, x, res.signal, *tail ? ": " : "", tail);
					else
						err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
							"%s:%u: RUN %s: exit status %d%s%s", b->name,
							in->line, x, res.exit_code, *tail ? ": " : "", tail);
					sbx_exec_result_free(&res);
					goto fail;
				}
				sbx_exec_result_free(&res);
			}
			if (snap_step(b, err) < 0)
				goto fail;
		}
	}
	if (staging)
		(void)fs_rm_rf(staging);
	json_object_set_new(step, "state", json_string("done"));
	json_object_set_new(step, "cached", json_boolean(cached));
	json_object_set_new(step, "changes_files", json_boolean(fs_step));
	if (fs_step)
		json_object_set_new(step, "snapshot_id", json_string(b->cur));
	json_object_set_new(step, "duration_ms", json_integer(now_ms_real() - t0));
	report(b, step);
	json_array_append(b->steps, step);
	return 0;
oom:
	err_oom(err);
fail:
	if (staging)
		(void)fs_rm_rf(staging);
	return err_ret(err) ? err_ret(err) : -1;
}

/* The template's manifest: the last snapshot's layers with the build's
 * configuration (ENV over the base's variables, WORKDIR, USER). */
static int final_manifest(build *b, char ret[STORE_DIGEST_SIZE], sbx_err **err)
{
	_cleanup_snapshot_ store_snapshot *s = NULL;
	if (!*b->cur) {
		/* No step changed a file: a template of the base spec itself. */
		_cleanup_(json_decrefp) json_t *t = NULL;
		if (sbx_template_add(b->ctx, b->o->tag, b->base_spec, &t, err) < 0)
			return -1;
		snprintf(ret, STORE_DIGEST_SIZE, "%s", json_str(t, "snapshot_id"));
	}
	if (store_snapshot_read(b->ctx->root, *b->cur ? b->cur : ret, &s, err) < 0)
		return -1;
	size_t n = 0;
	_cleanup_strv_free_ char **env = NULL;
	for (char **p = s->env; p && *p; p++)
		if (strv_set(&env, &n, *p) < 0)
			return err_oom(err);
	for (size_t i = 0; i < b->n_env; i++)
		if (strv_set(&env, &n, b->env[i]) < 0)
			return err_oom(err);
	if (!env && !(env = calloc(1, sizeof(char *))))
		return err_oom(err);
	char created[32];
	time_t now = time(NULL);
	struct tm tm;
	strftime(created, sizeof created, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
	/* CMD, ENTRYPOINT, WORKDIR, EXPOSE, LABEL: the manifest's image config
	 * (build/image_config.h), which exec, run and export apply; over the
	 * base's, as Docker inherits it (an ENTRYPOINT resets an inherited CMD). */
	_cleanup_(json_decrefp) json_t *ic = s->config ? json_loads(s->config, 0, NULL) : json_object();
	if (!json_is_object(ic))
		return err_oom(err);
	if (b->entrypoint) {
		json_object_set(ic, "Entrypoint", b->entrypoint);
		if (!b->cmd)
			json_object_del(ic, "Cmd");
	}
	if (b->cmd)
		json_object_set(ic, "Cmd", b->cmd);
	if (b->workdir)
		json_object_set_new(ic, "WorkingDir", json_string(b->workdir));
	const char *sub[] = {"ExposedPorts", "Labels"};
	for (size_t k = 0; k < ARRAY_SIZE(sub); k++)
		if (!json_is_object(json_object_get(ic, sub[k])))
			json_object_set_new(ic, sub[k], json_object());
	size_t i;
	json_t *p;
	json_array_foreach(b->expose, i, p)
	{
		_cleanup_free_ char *port = NULL;
		const char *ps = json_string_value(p);
		if (asprintf(&port, "%s%s", ps, strchr(ps, '/') ? "" : "/tcp") < 0)
			return err_oom(err);
		json_object_set_new(json_object_get(ic, "ExposedPorts"), port, json_object());
	}
	json_object_update(json_object_get(ic, "Labels"), b->labels);
	_cleanup_free_ char *ictext = NULL;
	if (image_config_text(ic, &ictext, err) < 0)
		return err_wrap(err, "image config");
	static char *empty[] = {NULL};
	store_snapshot m = *s;
	m.config = ictext;
	m.parent = *b->cur ? b->cur : ret;
	m.env = env;
	m.cwd = b->workdir ? b->workdir : s->cwd;
	m.user = b->user ? b->user : s->user;
	m.labels = empty;
	m.created_at = created;
	char id[STORE_DIGEST_SIZE];
	if (store_snapshot_write(b->ctx->root, &m, id, err) < 0)
		return err_wrap(err, "template manifest");
	memcpy(ret, id, STORE_DIGEST_SIZE);
	return 0;
}

_public_ int sbx_build(sbx_ctx *ctx, const sbx_build_opts *o, json_t **ret, sbx_err **err)
{
	if (!o || !o->dockerfile || !o->context || !o->tag)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "build: a Dockerfile, a context and a tag are needed");
	if (!store_label_valid(o->tag) || strlen(o->tag) > 100)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "build: invalid template name '%s'",
			       o->tag);
	struct stat st;
	if (stat(o->context, &st) < 0 || !S_ISDIR(st.st_mode))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "build context '%s' is not a directory",
			       o->context);
	int64_t t0 = now_ms_real();
	const char *name = o->dockerfile_name ? o->dockerfile_name : "Dockerfile";
	_cleanup_dockerfile_ dockerfile *df = NULL;
	if (dockerfile_parse(o->dockerfile, o->dockerfile_len, name, &df, err) < 0)
		return -1;
	_cleanup_(build_done) build b = {.ctx = ctx, .o = o, .name = name, .escape = df->escape};
	b.shell = json_pack("[s,s]", "/bin/sh", "-c");
	b.labels = json_object();
	b.expose = json_array();
	b.steps = json_array();
	if (!b.shell || !b.labels || !b.expose || !b.steps)
		return err_oom(err);
	/* .dockerignore of the context. */
	_cleanup_free_ char *ipath = fs_path_join(o->context, ".dockerignore"), *itext = NULL;
	size_t ilen = 0;
	if (ipath && fs_read_file(ipath, 1 << 20, &itext, &ilen) == 0) {
		if (dockerignore_parse(itext, ilen, &b.ignore, err) < 0)
			return err_wrap(err, ".dockerignore");
	} else if (!(b.ignore = calloc(1, sizeof(char *)))) {
		return err_oom(err);
	}
	/* Build args must name an ARG (Docker warns; we refuse: a typo would go unnoticed). */
	for (size_t i = 0; o->build_args && o->build_args[i]; i++) {
		const char *a = o->build_args[i];
		size_t kl = strcspn(a, "=");
		bool found = false;
		for (size_t k = 0; k < df->n && !found; k++)
			found = df->instr[k].kind == DF_ARG && !strncmp(df->instr[k].args, a, kl) &&
				(!df->instr[k].args[kl] || df->instr[k].args[kl] == '=');
		if (!a[kl] || !found)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--build-arg %.*s: %s", (int)kl,
				       a, a[kl] ? "no ARG of that name in the Dockerfile" : "expected K=V");
	}
	for (size_t i = 0; i < df->n; i++)
		if (do_step(&b, &df->instr[i], i, df->n, err) < 0)
			return -1;
	char tid[STORE_DIGEST_SIZE] = "";
	if (final_manifest(&b, tid, err) < 0)
		return -1;
	_cleanup_(json_decrefp) json_t *config = json_pack(
	    "{s:o,s:s?,s:s?,s:O?,s:O?,s:O,s:O,s:O}", "env", json_from_strv((const char *const *)b.env),
	    "workdir", b.workdir, "user", b.user, "cmd", b.cmd, "entrypoint", b.entrypoint, "expose",
	    b.expose, "labels", b.labels, "shell", b.shell);
	if (!config)
		return err_oom(err);
	/* The build record: the result's config as built (SHELL too, which no image config holds). */
	_cleanup_free_ char *rdir = NULL, *rpath = NULL, *rtext = NULL;
	if (asprintf(&rdir, "%s/builds", ctx->root) < 0 ||
	    asprintf(&rpath, "%s/%s.json", rdir, store_digest_hex(tid)) < 0)
		return err_oom(err);
	_cleanup_(json_decrefp) json_t *rec =
	    json_pack("{s:s,s:s,s:O}", "template", o->tag, "snapshot_id", tid, "config", config);
	if (!rec || !(rtext = json_dumps(rec, JSON_SORT_KEYS | JSON_COMPACT)))
		return err_oom(err);
	if (fs_mkdir_p(rdir, 0700) < 0 || fs_write_atomic(rpath, rtext, strlen(rtext), 0600) < 0)
		return err_errno(err, "build record '%s'", rpath);
	/* Only now, with every step done, does the name move. */
	_cleanup_(json_decrefp) json_t *t = NULL;
	if (sbx_template_add(ctx, o->tag, tid, &t, err) < 0)
		return -1;
	build_env_drop(&b);
	*ret = json_pack("{s:s,s:s,s:O,s:i,s:i,s:O,s:I}", "template", o->tag, "snapshot_id", tid, "steps",
			 b.steps, "cache_hits", b.hits, "cache_misses", b.misses, "config", config,
			 "build_ms", (json_int_t)(now_ms_real() - t0));
	return *ret ? 0 : err_oom(err);
}
