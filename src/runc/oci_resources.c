/* linux.resources of the OCI runtime spec (oci_spec.h): parsing, and the
 * document runc update's flags make. Pure. */
#include "runc/oci_spec.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/json.h"
#include "util/macro.h"
#include "runc/oci_spec_internal.h"

/* ---- resources ---- */

void oci_resources_done(oci_resources *r)
{
	if (!r)
		return;
	free(r->cpuset_cpus);
	free(r->cpuset_mems);
	free(r->blkio_devs);
	memset(r, 0, sizeof(*r));
}

/* docker's units.RAMInBytes: a number with an optional b/k/m/g/t/p suffix
 * (powers of 1024, "kb"/"mb"... too); -1 is "unlimited". */
static int ram_bytes(const char *s, int64_t *ret)
{
	if (streq(s, "-1")) {
		*ret = -1;
		return 0;
	}
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (end == s || errno || v < 0)
		return -EINVAL;
	double mul = 1;
	char u = (char)tolower((unsigned char)*end);
	const char *units = "bkmgtp";
	const char *at = *end ? strchr(units, u) : NULL;
	if (*end) {
		if (!at)
			return -EINVAL;
		for (const char *c = units; c < at; c++)
			mul *= 1024;
		end++;
		if (*end && tolower((unsigned char)*end) == 'b' && u != 'b')
			end++;
		else if (*end == 'i' && end[1] && tolower((unsigned char)end[1]) == 'b')
			end += 2;
	}
	if (*end || v * mul > 9.2e18)
		return -EINVAL;
	*ret = (int64_t)(v * mul);
	return 0;
}

int oci_resources_from_flags(const char *const *names, const char *const *values, size_t n, char **ret,
			     sbx_err **err)
{
	static const struct {
		const char *flag, *group, *key;
		char kind; /* 'm' memory size, 'i' integer, 's' string */
	} map[] = {
	    {"memory", "memory", "limit", 'm'},
	    {"memory-reservation", "memory", "reservation", 'm'},
	    {"memory-swap", "memory", "swap", 'm'},
	    {"kernel-memory", "memory", "kernel", 'm'},
	    {"kernel-memory-tcp", "memory", "kernelTCP", 'm'},
	    {"pids-limit", "pids", "limit", 'i'},
	    {"cpu-share", "cpu", "shares", 'i'},
	    {"cpu-quota", "cpu", "quota", 'i'},
	    {"cpu-period", "cpu", "period", 'i'},
	    {"cpu-rt-period", "cpu", "realtimePeriod", 'i'},
	    {"cpu-rt-runtime", "cpu", "realtimeRuntime", 'i'},
	    {"cpuset-cpus", "cpu", "cpus", 's'},
	    {"cpuset-mems", "cpu", "mems", 's'},
	    {"blkio-weight", "blockIO", "weight", 'i'},
	};
	_cleanup_json_ json_t *j = json_object();
	if (!j)
		return err_oom(err);
	for (size_t i = 0; i < n; i++) {
		size_t k;
		for (k = 0; k < ARRAY_SIZE(map) && !streq(map[k].flag, names[i]); k++)
			;
		if (k == ARRAY_SIZE(map))
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "update: unknown resource flag '--%s'", names[i]);
		json_t *g = json_object_get(j, map[k].group);
		if (!g) {
			g = json_object();
			if (!g || json_object_set_new(j, map[k].group, g) < 0)
				return err_oom(err);
		}
		json_t *v;
		if (map[k].kind == 's') {
			v = json_string(values[i]);
		} else {
			int64_t x;
			char *end;
			errno = 0;
			if (map[k].kind == 'm') {
				if (ram_bytes(values[i], &x) < 0)
					return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--%s '%s': want a size such as 64m",
						       names[i], values[i]);
			} else {
				x = strtoll(values[i], &end, 10);
				if (errno || end == values[i] || *end)
					return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "--%s '%s': want a number",
						       names[i], values[i]);
			}
			v = json_integer(x);
		}
		if (!v || json_object_set_new(g, map[k].key, v) < 0)
			return err_oom(err);
	}
	char *t = json_dumps(j, JSON_COMPACT);
	if (!t)
		return err_oom(err);
	*ret = t;
	return 0;
}

/* blockIO's device lists, appended to res->blkio_devs. */
static int parse_blkio_devs(const json_t *b, const char *k, oci_blkio_kind kind, oci_resources *res, sbx_err **err)
{
	json_t *a = json_object_get(b, k);
	if (!a || json_is_null(a))
		return 0;
	if (!json_is_array(a) || json_array_size(a) > 1024)
		return ospec_bad(err, k, "an array of at most 1024 devices");
	oci_blkio_dev *v = realloc(res->blkio_devs, (res->n_blkio_devs + json_array_size(a) + 1) * sizeof(*v));
	if (!v)
		return err_oom(err);
	res->blkio_devs = v;
	size_t i;
	json_t *d;
	json_array_foreach (a, i, d) {
		oci_blkio_dev x = {.kind = kind, .major = -1, .minor = -1};
		int64_t w = 0, lw = 0;
		int r;
		if (!json_is_object(d))
			return ospec_bad(err, k, "an array of {major, minor, ...}");
		if ((r = ospec_get_int(d, "major", k, 0, UINT32_MAX, &x.major, err)) < 0 ||
		    (r = ospec_get_int(d, "minor", k, 0, UINT32_MAX, &x.minor, err)) < 0)
			return r;
		if (x.major < 0 || x.minor < 0)
			return ospec_bad(err, k, "an array of {major, minor, ...}");
		if (kind == OCI_BLKIO_WEIGHT) {
			if ((r = ospec_get_int(d, "weight", k, 0, 1000, &w, err)) < 0 ||
			    (r = ospec_get_int(d, "leafWeight", k, 0, 1000, &lw, err)) < 0)
				return r;
			x.value = (uint64_t)w;
			x.leaf = (uint64_t)lw;
		} else if ((r = ospec_get_u64(d, "rate", k, &x.value, err)) < 0) {
			return r;
		}
		res->blkio_devs[res->n_blkio_devs++] = x;
	}
	return 0;
}

int oci_resources_parse_json(const json_t *j, oci_resources *ret, sbx_err **err)
{
	oci_resources res = {0};
	int r;
	if (!json_is_object(j))
		return ospec_bad(err, "resources", "an object");
	json_t *m = ospec_get_obj(j, "memory"), *p = ospec_get_obj(j, "pids"), *c = ospec_get_obj(j, "cpu");
	if ((r = ospec_check_obj(j, "memory", "resources.memory", err)) < 0 ||
	    (r = ospec_check_obj(j, "pids", "resources.pids", err)) < 0 ||
	    (r = ospec_check_obj(j, "cpu", "resources.cpu", err)) < 0)
		return r;
	if (m && ((r = ospec_get_int(m, "limit", "memory.limit", -1, INT64_MAX, &res.memory_limit, err)) < 0 ||
		  (r = ospec_get_int(m, "reservation", "memory.reservation", -1, INT64_MAX, &res.memory_reservation, err)) <
		      0 ||
		  (r = ospec_get_int(m, "swap", "memory.swap", -1, INT64_MAX, &res.memory_swap, err)) < 0))
		goto fail;
	if (m && json_object_get(m, "swappiness") && !json_is_null(json_object_get(m, "swappiness"))) {
		int64_t sw = -1;
		/* docker sends -1 ("the default") when unset through the API */
		if ((r = ospec_get_int(m, "swappiness", "memory.swappiness", -1, 100, &sw, err)) < 0)
			goto fail;
		res.has_swappiness = sw >= 0;
		res.memory_swappiness = sw >= 0 ? (uint64_t)sw : 0;
	}
	if (m && json_object_get(m, "disableOOMKiller") && !json_is_null(json_object_get(m, "disableOOMKiller"))) {
		bool d = false;
		if ((r = ospec_get_bool(m, "disableOOMKiller", "memory.disableOOMKiller", &d, err)) < 0)
			goto fail;
		res.disable_oom_killer = d ? 1 : -1;
	}
	json_t *b = ospec_get_obj(j, "blockIO");
	if ((r = ospec_check_obj(j, "blockIO", "resources.blockIO", err)) < 0)
		goto fail;
	if (b) {
		int64_t w = 0, lw = 0;
		if ((r = ospec_get_int(b, "weight", "blockIO.weight", 0, 1000, &w, err)) < 0 ||
		    (r = ospec_get_int(b, "leafWeight", "blockIO.leafWeight", 0, 1000, &lw, err)) < 0)
			goto fail;
		res.blkio_weight = (uint64_t)w;
		res.blkio_leaf_weight = (uint64_t)lw;
		static const struct {
			const char *key;
			oci_blkio_kind kind;
		} lists[] = {{"weightDevice", OCI_BLKIO_WEIGHT},
			     {"throttleReadBpsDevice", OCI_BLKIO_READ_BPS},
			     {"throttleWriteBpsDevice", OCI_BLKIO_WRITE_BPS},
			     {"throttleReadIOPSDevice", OCI_BLKIO_READ_IOPS},
			     {"throttleWriteIOPSDevice", OCI_BLKIO_WRITE_IOPS}};
		for (size_t i = 0; i < ARRAY_SIZE(lists); i++)
			if ((r = parse_blkio_devs(b, lists[i].key, lists[i].kind, &res, err)) < 0)
				goto fail;
	}
	if (p && (r = ospec_get_int(p, "limit", "pids.limit", -1, INT64_MAX, &res.pids_limit, err)) < 0)
		goto fail;
	if (c) {
		int64_t q = 0;
		if ((r = ospec_get_u64(c, "shares", "cpu.shares", &res.cpu_shares, err)) < 0 ||
		    (r = ospec_get_int(c, "quota", "cpu.quota", -1, INT64_MAX, &q, err)) < 0 ||
		    (r = ospec_get_u64(c, "period", "cpu.period", &res.cpu_period, err)) < 0 ||
		    (r = ospec_get_str(c, "cpus", "cpu.cpus", &res.cpuset_cpus, err)) < 0 ||
		    (r = ospec_get_str(c, "mems", "cpu.mems", &res.cpuset_mems, err)) < 0)
			goto fail;
		res.cpu_quota = q;
	}
	*ret = res;
	return 0;
fail:
	oci_resources_done(&res);
	return r;
}

int oci_resources_parse(const char *text, size_t len, oci_resources *ret, sbx_err **err)
{
	json_error_t je;
	_cleanup_json_ json_t *j = json_loadb(text, len, 0, &je);
	if (!j)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "resources: %s (line %d)", je.text, je.line);
	return oci_resources_parse_json(j, ret, err);
}
