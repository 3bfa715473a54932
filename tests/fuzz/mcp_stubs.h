/* Stubs of the sbx_* calls the MCP tools make, shared by the fuzz targets
 * that drive the MCP server (fuzz_jsonrpc.c, fuzz_http.c): no environment is
 * ever created. The create stub aborts if an argument escaped the schema. */
#pragma once
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/env_state.h"
#include "sbx.h"
#include "util/err.h"
#include "util/json.h"

static bool known(const char *ref)
{
	return ref && (streq(ref, "fuzzenv") || streq(ref, "0123456789ab"));
}

int sbx_env_resolve(sbx_ctx *ctx, const char *ref, char **ret_id, sbx_err **err)
{
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment: '%s'", ref ? ref : "");
	*ret_id = strdup("0123456789ab");
	return *ret_id ? 0 : -ENOMEM;
}

int sbx_env_create(sbx_ctx *ctx, const sbx_create_opts *o, char **ret_id, json_t **ret_warnings,
		   sbx_err **err)
{
	if (o->network && !streq(o->network, "none"))
		return err_set(err, SBX_E_UNAVAILABLE, ENOTSUP, "network '%s' is not available", o->network);
	for (const char *const *e = o->env; e && *e; e++)
		if (!strchr(*e, '='))
			abort(); /* the server built a malformed K=V */
	for (size_t i = 0; i < o->n_volumes; i++)
		if (!o->volumes[i].host || !o->volumes[i].path)
			abort();
	/* The schema's bounds held: nothing negative or absurd reaches the library. */
	if ((o->memory_bytes && (o->memory_bytes < SBX_MEMORY_MIN || o->memory_bytes > SBX_MEMORY_MAX)) ||
	    o->pids < 0 || o->pids > SBX_PIDS_MAX || !(o->cpus >= 0 && o->cpus <= SBX_CPUS_MAX) ||
	    o->timeout_ms < 0 || o->timeout_ms > SBX_TIMEOUT_MAX_MS || o->ttl_ms < 0 ||
	    o->ttl_ms > SBX_TTL_MAX_MS || o->output_bytes < 0 || o->output_bytes > SBX_OUTPUT_MAX ||
	    o->disk_bytes < 0 || o->disk_bytes > SBX_DISK_MAX)
		abort();
	/* Published ports: each one parsed, on loopback, at most 64. */
	size_t n_pub = 0;
	for (const char *const *p = o->publish; p && *p; p++, n_pub++) {
		sbx_port_map m;
		if (n_pub >= SBX_PUBLISH_MAX || sbx_parse_publish(*p, &m, NULL) < 0 ||
		    (strncmp(m.host_ip, "127.", 4) != 0 && !streq(m.host_ip, "::1")))
			abort();
	}
	/* A policy is a profile name or a document, never silently dropped. */
	if (o->policy && !streq(o->policy, "strict") && !streq(o->policy, "dev") &&
	    !streq(o->policy, "open") && o->policy[0] != '{')
		abort();
	*ret_id = strdup("0123456789ab");
	if (ret_warnings)
		*ret_warnings = json_pack("[s]", "no landlock");
	return 0;
}

/* environment_create's result with publish: the ports bound. */
int sbx_env_ports(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	*ret = json_pack("{s:s,s:[]}", "environment_id", "0123456789ab", "ports");
	return *ret ? 0 : -ENOMEM;
}

/* main's tools.c asks for the base snapshot of a new environment. */
int sbx_env_inspect(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	*ret = json_pack("{s:s,s:s}", "environment_id", "0123456789ab", "snapshot_id",
			 "sha256:0000000000000000000000000000000000000000000000000000000000000000");
	return *ret ? 0 : -ENOMEM;
}

int sbx_env_net_log(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	*ret = json_pack("{s:[]}", "connections");
	return *ret ? 0 : -ENOMEM;
}

int sbx_template_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[]}", "templates");
	return *ret ? 0 : -ENOMEM;
}

/* Trees in and out: a fixed small "tar" out; what comes in is consumed. */
int sbx_env_tar_out(sbx_ctx *ctx, const char *ref, const char *env_dir, int out_fd, sbx_err **err)
{
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	return write(out_fd, "tar", 3) == 3 ? 0 : err_set(err, SBX_E_INTERNAL, EIO, "write");
}

int sbx_env_tar_in(sbx_ctx *ctx, const char *ref, const char *env_dir, int in_fd, bool create, sbx_err **err)
{
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	char buf[4096];
	while (read(in_fd, buf, sizeof(buf)) > 0)
		;
	return 0;
}

int sbx_env_remove(sbx_ctx *ctx, const char *ref, sbx_err **err)
{
	return known(ref) ? 0 : err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
}

int sbx_env_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[{s:s}]}", "environments", "environment_id", "0123456789ab");
	return 0;
}

int sbx_policy_list(json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[{s:s,s:s},{s:s,s:s},{s:s,s:s}]}", "policies", "name", "strict", "description",
			 "the default", "name", "dev", "description", "registries", "name", "open",
			 "description", "unsafe");
	return 0;
}

int sbx_env_exec(sbx_ctx *ctx, const char *ref, const sbx_exec_opts *o, sbx_exec_result *ret, sbx_err **err)
{
	if (!o->argv || !o->argv[0])
		abort();
	const char *arg = o->argv[1] && o->argv[2] ? o->argv[2] : o->argv[0]; /* sh -c CMD, or argv */
	/* Echo the command back through on_output in two pieces, so that
	 * progress sees split (possibly invalid) UTF-8. */
	size_t n = strlen(arg);
	if (o->on_output) {
		o->on_output(o->userdata, SBX_STDOUT, arg, n / 2);
		o->on_output(o->userdata, SBX_STDERR, arg + n / 2, n - n / 2);
	}
	*ret =
	    (sbx_exec_result){.exit_code = (int)(n % 3), .stdout_buf = strdup(arg), .stderr_buf = strdup("")};
	ret->stdout_len = n;
	return 0;
}

void sbx_exec_result_free(sbx_exec_result *r)
{
	free(r->stdout_buf);
	free(r->stderr_buf);
}

json_t *sbx_exec_result_json(const sbx_exec_result *r)
{
	json_t *out = json_stringn(r->stdout_buf, r->stdout_len);
	return json_pack("{s:i,s:o,s:s}", "exit_code", r->exit_code, "stdout", out ? out : json_string(""),
			 "stderr", r->stderr_buf);
}

int sbx_env_read_file(sbx_ctx *ctx, const char *ref, const char *path, int64_t max_bytes, char **ret_data,
		      size_t *ret_len, int64_t *ret_size, bool *ret_truncated, sbx_err **err)
{
	/* The path itself is the content: lets the fuzzer reach the UTF-8
	 * and truncation handling. */
	size_t n = strlen(path);
	size_t take = max_bytes > 0 && (size_t)max_bytes < n ? (size_t)max_bytes : n;
	*ret_data = strndup(path, take);
	*ret_len = take;
	*ret_size = (int64_t)n;
	*ret_truncated = take < n;
	return 0;
}

int sbx_env_write_file(sbx_ctx *ctx, const char *ref, const char *path, const void *data, size_t len,
		       int mode, sbx_err **err)
{
	return 0;
}

int sbx_env_list_files(sbx_ctx *ctx, const char *ref, const char *path, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[]}", "entries");
	return 0;
}

int sbx_env_snapshot(sbx_ctx *ctx, const char *ref, const char *label, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:s,s:i,s:i,s:i,s:f}", "snapshot_id", "sha256:00", "size_bytes", 0, "new_bytes", 0,
			 "files", 0, "snapshot_ms", 0.0);
	return 0;
}

int sbx_env_restore(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:s,s:s,s:f}", "environment_id", ref, "snapshot_id", snapshot, "restore_ms", 0.0);
	return 0;
}

int sbx_snapshot_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[]}", "snapshots");
	return 0;
}

int sbx_snapshot_push(sbx_ctx *ctx, const char *snapshot, const char *ref, bool insecure, json_t **ret,
		      sbx_err **err)
{
	*ret = json_pack("{s:s,s:I,s:I}", "manifest_digest", "sha256:0", "uploaded_bytes", (json_int_t)0,
			 "skipped_bytes", (json_int_t)0);
	return 0;
}

int sbx_snapshot_pull(sbx_ctx *ctx, const char *ref, const char *name, bool insecure, json_t **ret,
		      sbx_err **err)
{
	*ret = json_pack("{s:s,s:s,s:s}", "snapshot_id", "sha256:0", "label", name ? name : "x",
			 "manifest_digest", "sha256:0");
	return 0;
}

int sbx_snapshot_resolve(sbx_ctx *ctx, const char *ref, char **ret_digest, sbx_err **err)
{
	*ret_digest = strdup(ref);
	return 0;
}

int sbx_trace_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[{s:s,s:[s],s:s}]}", "traces", "trace_id",
			 "sha256:0000000000000000000000000000000000000000000000000000000000000001", "argv",
			 "true", "snapshot_id",
			 "sha256:0000000000000000000000000000000000000000000000000000000000000002");
	return 0;
}

int sbx_trace_show(sbx_ctx *ctx, const char *ref, const sbx_trace_filter *f, FILE *out, sbx_err **err)
{
	fputs("  0.000001 [2] getpid() = 2\n", out);
	return 0;
}

int sbx_trace_manifest(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:s}", "trace_id", ref);
	return 0;
}

int sbx_trace_replay(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	if (!strstr(ref, "sha256:"))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such trace: '%s'", ref);
	*ret = json_pack("{s:s,s:s,s:f}", "trace_id", ref, "verdict", "match", "replay_ms", 1.0);
	return 0;
}

int sbx_attest(sbx_ctx *ctx, const char *trace, const sbx_attest_opts *o, json_t **ret, sbx_err **err)
{
	if (!strstr(trace, "sha256:"))
		return err_set(err, SBX_E_UNAVAILABLE, ENOKEY, "no signing key");
	*ret = json_pack("{s:{},s:s,s:[],s:s}", "envelope", "keyid", trace, "subjects", "trace_id", trace);
	return 0;
}

int sbx_trace_replay_inputs(sbx_ctx *ctx, const char *ref, const char *inputs, json_t **ret, sbx_err **err)
{
	if (inputs && strcmp(inputs, "read_set") != 0 && strcmp(inputs, "volumes") != 0)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "inputs '%s'", inputs);
	return sbx_trace_replay(ctx, ref, ret, err);
}

int sbx_env_phase(sbx_ctx *ctx, const char *ref, const char *phase, json_t **ret, sbx_err **err)
{
	if (phase && !streq(phase, "agent") && !streq(phase, "setup"))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown phase '%s'", phase);
	*ret = json_pack("{s:s,s:s}", "environment_id", ref, "phase", phase ? phase : "setup");
	return 0;
}

/* src/api/secrets.c: a policy from a client names no host file. */
int secrets_mcp_check(const json_t *doc, const char *what, sbx_err **err);
int secrets_mcp_check(const json_t *doc, const char *what, sbx_err **err)
{
	const char *k;
	json_t *v;
	json_object_foreach(
	    (json_t *)json_object_get(doc, "secrets"), k,
	    v) if (json_object_get(v, "file")) return err_set(err, SBX_E_INVALID_ARGUMENT, EPERM,
							      "%s.secrets.%s: no host files over MCP", what,
							      k);
	return 0;
}

int sbx_env_diff(sbx_ctx *ctx, const char *ref, const char *snapshot, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[s],s:[],s:[]}", "added", "/root/x", "modified", "deleted");
	return 0;
}

int sbx_snapshot_manifest(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:s,s:i}", "snapshot_id", ref, "schema", 1);
	return 0;
}

/* Warm environments (src/api/pause.c). */
static int warm_stub(const char *ref, const char *state, json_t **ret, sbx_err **err)
{
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	*ret = json_pack("{s:s,s:s}", "environment_id", "0123456789ab", "state", state);
	return *ret ? 0 : -ENOMEM;
}
int sbx_env_pause(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	return warm_stub(ref, "paused", ret, err);
}
int sbx_env_resume(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	return warm_stub(ref, "running", ret, err);
}
bool sbx_env_from_pool(sbx_ctx *ctx, const char *id)
{
	return false;
}
/* main's tools.c reads the base snapshot of a new environment from its record. */
int sbx_env_origin(sbx_ctx *ctx, const char *id, char **ret_snapshot_id, bool *ret_from_pool, sbx_err **err)
{
	if (!known(id))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	if (ret_snapshot_id &&
	    !(*ret_snapshot_id =
		  strdup("sha256:0000000000000000000000000000000000000000000000000000000000000000")))
		return -ENOMEM;
	if (ret_from_pool)
		*ret_from_pool = false;
	return 0;
}
int sbx_pool_set(sbx_ctx *ctx, const char *source, int size, const char *policy, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:s,s:s,s:s,s:i}", "pool", "0123456789abcdef", "kind", "template", "source",
			 source, "size", size);
	return *ret ? 0 : -ENOMEM;
}
int sbx_pool_list(sbx_ctx *ctx, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[],s:i}", "pools", "max_ready", 64);
	return *ret ? 0 : -ENOMEM;
}
int sbx_pool_remove(sbx_ctx *ctx, const char *source, const char *policy, json_t **ret, sbx_err **err)
{
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no pool");
}
int sbx_pool_set_opts(sbx_ctx *ctx, const char *source, int size, const sbx_pool_opts *o, json_t **ret,
		      sbx_err **err)
{
	*ret = json_pack("{s:s,s:s,s:s,s:i,s:b}", "pool", "0123456789abcdef", "kind", "template", "source",
			 source, "size", size, "code", o && o->code);
	return *ret ? 0 : -ENOMEM;
}
int sbx_pool_remove_opts(sbx_ctx *ctx, const char *source, const sbx_pool_opts *o, json_t **ret,
			 sbx_err **err)
{
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no pool");
}

const char *sbx_version(void)
{
	return "fuzz";
}

/* template_build: no allowed directory in the fuzzed server. */
/* The environment record (tools.c reads a policy's timeout): none here. */
int env_record_read(const sbx_ctx *ctx, const char *id, env_record *ret)
{
	*ret = (env_record){0};
	return -ENOENT;
}

void env_record_clear(env_record *r)
{
	if (r) {
		json_decref(r->json);
		r->json = NULL;
	}
}

char *sbx_ctx_host_dir_allowed(const sbx_ctx *ctx, const char *path)
{
	errno = EPERM;
	return NULL;
}

int sbx_build(sbx_ctx *ctx, const sbx_build_opts *o, json_t **ret, sbx_err **err)
{
	return err_set(err, SBX_E_INTERNAL, EINVAL, "unreachable: no allowed directory");
}

/* Background processes (docs/processes.md): the schema's bounds hold, a
 * process id that reaches the library is p<number>. */
static void proc_id_ok(const char *p)
{
	size_t n = p ? strlen(p) : 0;
	if (n < 2 || n > 10 || p[0] != 'p' || p[1] < '1' || p[1] > '9' ||
	    strspn(p + 1, "0123456789") != n - 1)
		abort();
}

static int proc_stub(const char *ref, const char *pid, json_t **ret, sbx_err **err)
{
	proc_id_ok(pid);
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such process");
}

int sbx_process_start(sbx_ctx *ctx, const char *ref, const sbx_exec_opts *o, json_t **ret, sbx_err **err)
{
	if (!o->argv || !o->argv[0] || o->stdin_data || o->trace)
		abort();
	*ret = json_pack("{s:s,s:s,s:i}", "environment_id", "0123456789ab", "process_id", "p1", "pid", 2);
	return *ret ? 0 : -ENOMEM;
}
int sbx_process_list(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:s,s:[]}", "environment_id", "0123456789ab", "processes");
	return *ret ? 0 : -ENOMEM;
}
int sbx_process_get(sbx_ctx *ctx, const char *ref, const char *pid, json_t **ret, sbx_err **err)
{
	return proc_stub(ref, pid, ret, err);
}
int sbx_process_output(sbx_ctx *ctx, const char *ref, const char *pid, int64_t so, int64_t se, int64_t max,
		       json_t **ret, sbx_err **err)
{
	if (so < 0 || se < 0 || max < 1 || max > 262144)
		abort();
	return proc_stub(ref, pid, ret, err);
}
int sbx_process_kill(sbx_ctx *ctx, const char *ref, const char *pid, int sig, json_t **ret, sbx_err **err)
{
	if (sig < 1 || sig > 64)
		abort();
	return proc_stub(ref, pid, ret, err);
}
int sbx_process_wait(sbx_ctx *ctx, const char *ref, const char *pid, int64_t timeout_ms, json_t **ret,
		     sbx_err **err)
{
	if (timeout_ms < 0 || timeout_ms > 300000)
		abort();
	return proc_stub(ref, pid, ret, err);
}
int sbx_parse_signal(const char *s, int *ret, sbx_err **err)
{
	if (s && (streq(s, "TERM") || streq(s, "KILL"))) {
		*ret = streq(s, "TERM") ? 15 : 9;
		return 0;
	}
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "unknown signal");
}

/* snapshot_export, snapshot_import: likewise refused before the library is called. */
char *sbx_ctx_host_dest_allowed(const sbx_ctx *ctx, const char *path)
{
	errno = EPERM;
	return NULL;
}

int sbx_snapshot_export(sbx_ctx *ctx, const char *snapshot, const char *oci_dir, json_t **ret, sbx_err **err)
{
	return err_set(err, SBX_E_INTERNAL, EINVAL, "unreachable: no allowed directory");
}

int sbx_image_import(sbx_ctx *ctx, const char *oci_ref, const char *name, json_t **ret, sbx_err **err)
{
	return err_set(err, SBX_E_INTERNAL, EINVAL, "unreachable: no allowed directory");
}

/* The code interpreter (docs/code.md): what reaches the library holds the
 * schema's promises (code given, one of language and context, a bounded
 * timeout); the stub answers as a context that is not there. */
int sbx_run_code(sbx_ctx *ctx, const char *ref, const sbx_code_opts *o, json_t **ret, sbx_err **err)
{
	if (!o->code || (o->language && o->context_id) || o->timeout_ms < 0)
		abort();
	if (!known(ref))
		return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such environment");
	*ret =
	    json_pack("{s:[],s:s,s:s,s:s}", "results", "stdout", o->code, "stderr", "", "context_id", "c1");
	return *ret ? 0 : -ENOMEM;
}
int sbx_context_create(sbx_ctx *ctx, const char *ref, const char *language, const char *cwd, json_t **ret,
		       sbx_err **err)
{
	if (cwd && !*cwd)
		abort();
	*ret = json_pack("{s:s,s:s,s:s}", "context_id", "c1", "language", language ? language : "python",
			 "cwd", cwd ? cwd : "/root");
	return *ret ? 0 : -ENOMEM;
}
int sbx_context_list(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	*ret = json_pack("{s:[]}", "contexts");
	return *ret ? 0 : -ENOMEM;
}
int sbx_context_restart(sbx_ctx *ctx, const char *ref, const char *context_id, sbx_err **err)
{
	if (!context_id)
		abort();
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such context");
}
int sbx_context_remove(sbx_ctx *ctx, const char *ref, const char *context_id, sbx_err **err)
{
	return sbx_context_restart(ctx, ref, context_id, err);
}
/* Desktops (tools_desktop.c): a screenshot's file is never there. */
int sbx_env_file_open(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, int *ret_fd,
		      int64_t *ret_size, sbx_err **err)
{
	if (!path || path[0] != '/')
		abort();
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such file");
}
int sbx_env_remove_path(sbx_ctx *ctx, const char *ref, const char *path, const sbx_fs_opts *o, sbx_err **err)
{
	return err_set(err, SBX_E_NOT_FOUND, ENOENT, "no such file");
}
