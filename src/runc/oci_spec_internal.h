/* Module-private interface of the OCI spec's parsers: the typed getters
 * (oci_spec_get.c) that oci_spec.c and oci_resources.c share. Each reads
 * member k of object o; absent (or null) leaves *ret as it is and returns 0,
 * a wrong type or range is SBX_E_INVALID_ARGUMENT naming field. Files:
 *
 *   oci_spec.c       the process, mounts, hooks, the whole config.json
 *   oci_resources.c  linux.resources, runc update's flags
 *   oci_names.c      the tables of names (caps, signals, rlimits, mounts)
 *   oci_spec_get.c   these getters
 *
 * Calls go one way: oci_spec.c -> oci_resources.c, oci_names.c,
 * oci_spec_get.c; oci_resources.c -> oci_spec_get.c. */
#pragma once
#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "runc/oci_spec.h"
#include "util/err.h"

/* "'field' must be want" (SBX_E_INVALID_ARGUMENT); returns -1. */
int ospec_bad(sbx_err **err, const char *field, const char *want);
int ospec_get_str(const json_t *o, const char *k, const char *field, char **ret, sbx_err **err);
int ospec_get_strv(const json_t *o, const char *k, const char *field, char ***ret, sbx_err **err);
int ospec_get_bool(const json_t *o, const char *k, const char *field, bool *ret, sbx_err **err);
int ospec_get_int(const json_t *o, const char *k, const char *field, int64_t lo, int64_t hi, int64_t *ret,
		  sbx_err **err);
int ospec_get_u64(const json_t *o, const char *k, const char *field, uint64_t *ret, sbx_err **err);
/* The object at k, or NULL (absent or not an object: check_obj tells). */
json_t *ospec_get_obj(const json_t *o, const char *k);
int ospec_check_obj(const json_t *o, const char *k, const char *field, sbx_err **err);
int ospec_check_arr(const json_t *o, const char *k, const char *field, sbx_err **err);
