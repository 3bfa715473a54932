/* The typed getters the OCI spec's parsers share (oci_spec_internal.h):
 * absent is fine, a wrong type is an error naming the field. Pure. */
#include "runc/oci_spec_internal.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "util/json.h"

/* ---- small typed getters: absent is fine, a wrong type is an error ---- */

int ospec_bad(sbx_err **err, const char *field, const char *want)
{
	return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' must be %s", field, want);
}

int ospec_get_str(const json_t *o, const char *k, const char *field, char **ret, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return ospec_bad(err, field, "a string");
	*ret = strdup(json_string_value(v));
	return *ret ? 0 : err_oom(err);
}

int ospec_get_strv(const json_t *o, const char *k, const char *field, char ***ret, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_array(v))
		return ospec_bad(err, field, "an array of strings");
	char **s = json_to_strv(v);
	if (!s)
		return ospec_bad(err, field, "an array of strings");
	*ret = s;
	return 0;
}

int ospec_get_bool(const json_t *o, const char *k, const char *field, bool *ret, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	if (!json_is_boolean(v))
		return ospec_bad(err, field, "a boolean");
	*ret = json_is_true(v);
	return 0;
}

/* An integer in [lo, hi]; a real with an integral value is accepted too
 * (some writers emit 1e9). */
int ospec_get_int(const json_t *o, const char *k, const char *field, int64_t lo, int64_t hi, int64_t *ret,
		   sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	int64_t x;
	if (json_is_integer(v))
		x = json_integer_value(v);
	else if (json_is_real(v) && json_real_value(v) >= -9.2e18 && json_real_value(v) <= 9.2e18 &&
		 (double)(int64_t)json_real_value(v) == json_real_value(v))
		x = (int64_t)json_real_value(v);
	else
		return ospec_bad(err, field, "an integer");
	if (x < lo || x > hi)
		return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE, "'%s' is out of range", field);
	*ret = x;
	return 0;
}

int ospec_get_u64(const json_t *o, const char *k, const char *field, uint64_t *ret, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (!v || json_is_null(v))
		return 0;
	/* jansson reads integers as int64; a uint64 above INT64_MAX (RLIM_INFINITY
	 * written as 18446744073709551615) arrives as a real. */
	if (json_is_integer(v)) {
		if (json_integer_value(v) < 0)
			return err_set(err, SBX_E_INVALID_ARGUMENT, ERANGE, "'%s' is out of range", field);
		*ret = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_real(v) && json_real_value(v) >= 0) {
		double d = json_real_value(v);
		*ret = d >= 1.8446744073709552e19 ? UINT64_MAX : (uint64_t)d;
		return 0;
	}
	return ospec_bad(err, field, "an unsigned integer");
}

json_t *ospec_get_obj(const json_t *o, const char *k)
{
	json_t *v = json_object_get(o, k);
	return json_is_object(v) ? v : NULL;
}

int ospec_check_obj(const json_t *o, const char *k, const char *field, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (v && !json_is_null(v) && !json_is_object(v))
		return ospec_bad(err, field, "an object");
	return 0;
}

int ospec_check_arr(const json_t *o, const char *k, const char *field, sbx_err **err)
{
	json_t *v = json_object_get(o, k);
	if (v && !json_is_null(v) && !json_is_array(v))
		return ospec_bad(err, field, "an array");
	return 0;
}
