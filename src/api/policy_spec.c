/* A --policy spec (policy_apply.c, phase_plan.c, pool.c, env_create.c): a
 * built-in profile's name, inline JSON or a file, loaded as a policy. At
 * the bottom of src/api: it calls nothing else there. */
#include <errno.h>
#include <string.h>

#include "api/base.h"
#include "policy/policy.h"
#include "util/fs.h"

bool policy_spec_is_profile(const char *s)
{
	return streq(s, "strict") || streq(s, "dev") || streq(s, "open");
}

int policy_load_spec(const char *spec, policy **ret, sbx_err **err)
{
	if (policy_spec_is_profile(spec))
		return policy_profile(spec, ret, err);
	if (spec[0] == '{')
		return policy_parse(spec, strlen(spec), ret, err);
	_cleanup_free_ char *buf = NULL;
	size_t len = 0;
	int r = fs_read_file(spec, 1 << 20, &buf, &len);
	if (r < 0)
		return err_set(
		    err, r == -ENOENT ? SBX_E_NOT_FOUND : SBX_E_INVALID_ARGUMENT, -r,
		    "policy '%s': not a built-in profile (strict, dev, open) and not a readable file: %s",
		    spec, strerror(-r));
	if (policy_parse(buf, len, ret, err) < 0)
		return err_wrap(err, "policy file '%s'", spec);
	return 0;
}
