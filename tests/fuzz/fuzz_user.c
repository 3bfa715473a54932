/* libFuzzer target: --user specs and their lookup in /etc/passwd and
 * /etc/group text (which the environment writes: hostile input to init),
 * and capability names. Input: SPEC 0xff PASSWD 0xff GROUP. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/caps.h"
#include "runtime/user.h"

static char *part(const uint8_t **p, const uint8_t *end)
{
	const uint8_t *q = memchr(*p, 0xff, (size_t)(end - *p));
	if (!q)
		q = end;
	char *s = malloc((size_t)(q - *p) + 1);
	if (!s)
		abort();
	memcpy(s, *p, (size_t)(q - *p));
	s[q - *p] = 0;
	*p = q < end ? q + 1 : end;
	return s;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p = data, *end = data + size;
	char *spec = part(&p, end), *passwd = part(&p, end), *group = part(&p, end);
	user_spec s;
	if (user_spec_parse(spec, &s, NULL) == 0) {
		/* what was accepted is a name of the allowed characters, or an id */
		if (!s.uid_numeric && (!s.name[0] || strlen(s.name) > USER_NAME_MAX || s.name[0] == '-'))
			abort();
		user_ident id;
		sbx_err *e = NULL;
		if (user_resolve_text(&s, passwd, group, &id, &e) == 0) {
			if (id.n_groups < 1 || id.n_groups > USER_GROUPS_MAX || id.groups[0] != id.gid)
				abort();
			if (strlen(id.name) > USER_NAME_MAX || (id.home[0] && id.home[0] != '/'))
				abort();
			if (s.uid_numeric && id.uid != s.uid)
				abort();
			if (s.has_group && s.gid_numeric && id.gid != s.gid)
				abort();
		} else if (!e || !sbx_err_message(e)[0])
			abort();
		sbx_err_free(e);
	}
	int c = caps_number(spec);
	if (c >= 0 && caps_number(caps_name(c)) != c)
		abort();
	const char *const one[] = {spec, NULL};
	uint64_t set;
	if (caps_parse_list(one, true, "f", &set, NULL) == 0 && (set & ~caps_safe_set))
		abort();
	free(spec);
	free(passwd);
	free(group);
	return 0;
}
