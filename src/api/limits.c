/* The bounds on a create's limits (include/sbx.h): one check, run at the
 * start of every create, so that no front end can pass a negative or absurd
 * limit to the cgroup (MCP `pids: 1000000000`, `memory_bytes: -5`); and the
 * one reading of a create's network option. Pure. */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/base.h"
#include "policy/egress_match.h"
#include "sbx.h"
#include "util/err.h"
#include "util/macro.h"

/* v is 0, or -1 when none_ok, or in [lo, hi] (spelled lo_s, hi_s). */
static int check_range(const char *name, int64_t v, bool none_ok, int64_t lo, int64_t hi, const char *lo_s,
		       const char *hi_s, sbx_err **err)
{
	if (v == 0 || (none_ok && v == -1) || (v >= lo && v <= hi))
		return 0;
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
		       "invalid limit %s %lld: expected 0 (the default)%s, or at least %s and at most %s",
		       name, (long long)v, none_ok ? ", -1 (none)" : "", lo_s, hi_s);
}

_public_ int sbx_env_limits_check(const sbx_create_opts *o, sbx_err **err)
{
	if (!o)
		return 0;
	if (check_range("memory_bytes", o->memory_bytes, true, SBX_MEMORY_MIN, SBX_MEMORY_MAX, "4m", "64t",
			err) < 0 ||
	    check_range("pids", o->pids, true, 1, SBX_PIDS_MAX, "1", "4194304", err) < 0 ||
	    check_range("timeout_ms", o->timeout_ms, false, 1, SBX_TIMEOUT_MAX_MS, "1 ms", "30 days", err) <
		0 ||
	    check_range("ttl_ms", o->ttl_ms, false, 1, SBX_TTL_MAX_MS, "1 ms", "365 days", err) < 0 ||
	    check_range("output_bytes", o->output_bytes, true, 1, SBX_OUTPUT_MAX, "1", "1g", err) < 0 ||
	    (o->version >= 3 && check_range("disk_bytes", o->disk_bytes, false, SBX_DISK_MIN, SBX_DISK_MAX,
					    "4m", "64t", err) < 0) ||
	    (o->version >= 5 && check_range("idle_suspend_ms", o->idle_suspend_ms, false, 1, SBX_TTL_MAX_MS,
					    "1 ms", "365 days", err) < 0))
		return -1;
	if (!isfinite(o->cpus) || (o->cpus != 0 && (o->cpus < SBX_CPUS_MIN || o->cpus > SBX_CPUS_MAX)))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid limit cpus %g: expected 0 (none) or %g to %g cores", o->cpus,
			       SBX_CPUS_MIN, SBX_CPUS_MAX);
	return 0;
}

int api_network_opts(const sbx_create_opts *o, const char **ret_mode, char ***ret_allow, sbx_err **err)
{
	const char *spec = o ? o->network : NULL;
	const char *const *list = o && o->version >= 6 ? o->network_allow : NULL;
	if (list && (!spec || !net_proxied(spec)))
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "network_allow needs network \"allow\" or \"internet\" (network is '%s')",
			       spec ?: "none");
	if (spec && streq(spec, "internet")) {
		/* Every public host and port through the proxy; a list only adds
		 * internal addresses (IP rules: egress_match.h). */
		_cleanup_strv_free_ char **v = NULL;
		size_t n = 0;
		for (const char *const *p = list; p && *p; p++)
			if (strv_push_copy(&v, &n, *p) < 0)
				return err_oom(err);
		_cleanup_egress_allowlist_ egress_allowlist *al = NULL;
		if (egress_allowlist_parse_open((const char *const *)v, &al, err) < 0)
			return err_wrap(err, "network allowlist");
		*ret_mode = "internet";
		*ret_allow = TAKE_PTR(v);
		return 0;
	}
	if (!spec || streq(spec, "none") || streq(spec, "open")) {
		*ret_mode = spec && streq(spec, "open") ? "open" : "none";
		*ret_allow = NULL;
		return 0;
	}
	_cleanup_strv_free_ char **v = NULL;
	size_t n = 0;
	if (list) {
		for (const char *const *p = list; *p; p++)
			if (strv_push_copy(&v, &n, *p) < 0)
				return err_oom(err);
	} else if (startswith(spec, "allow=") && spec[6]) {
		/* The string form: the only place a list is split at commas. */
		_cleanup_free_ char *copy = strdup(spec + 6);
		if (!copy)
			return err_oom(err);
		for (char *save = NULL, *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
			if (strv_push_copy(&v, &n, t) < 0)
				return err_oom(err);
	}
	/* An explicit empty list (the C API's network_allow) is a proxy that
	 * lets nothing out yet: sbx_env_egress_set() may give it rules later. */
	if (!n && list && !(v = calloc(1, sizeof(char *))))
		return err_oom(err);
	if (!n && !list)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "invalid network '%s': expected none, internet, open or allow=HOST[:PORT],...",
			       spec);
	_cleanup_egress_allowlist_ egress_allowlist *al = NULL;
	if (egress_allowlist_parse((const char *const *)v, &al, err) < 0)
		return err_wrap(err, "network allowlist");
	*ret_mode = "allow";
	*ret_allow = TAKE_PTR(v);
	return 0;
}
