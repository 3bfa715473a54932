/* The spec's linux.seccomp as a libseccomp filter. sbx's own deny list is
 * loaded as a second filter after it (proc.c): the kernel runs both and
 * takes the stricter result, which is what "merged" means here. */
#include <errno.h>
#include <seccomp.h>
#include <string.h>
#include <strings.h>

#include "runc/runc.h"
#include "util/json.h"
#include "util/macro.h"

static void ctx_freep(scmp_filter_ctx *c)
{
	if (*c)
		seccomp_release(*c);
}

static int action_of(const char *a, int64_t errnum, uint32_t *ret)
{
	if (!a)
		return -EINVAL;
	if (streq(a, "SCMP_ACT_ALLOW"))
		*ret = SCMP_ACT_ALLOW;
	else if (streq(a, "SCMP_ACT_ERRNO"))
		*ret = SCMP_ACT_ERRNO((uint16_t)(errnum > 0 ? errnum : EPERM));
	else if (streq(a, "SCMP_ACT_KILL") || streq(a, "SCMP_ACT_KILL_THREAD"))
		*ret = SCMP_ACT_KILL_THREAD;
	else if (streq(a, "SCMP_ACT_KILL_PROCESS"))
		*ret = SCMP_ACT_KILL_PROCESS;
	else if (streq(a, "SCMP_ACT_TRAP"))
		*ret = SCMP_ACT_TRAP;
	else if (streq(a, "SCMP_ACT_TRACE"))
		*ret = SCMP_ACT_TRACE((uint16_t)(errnum > 0 ? errnum : EPERM));
	else if (streq(a, "SCMP_ACT_LOG"))
		*ret = SCMP_ACT_LOG;
	else
		return -EOPNOTSUPP; /* SCMP_ACT_NOTIFY needs a listener: not supported */
	return 0;
}

static const struct {
	const char *n;
	enum scmp_compare c;
} ops[] = {{"SCMP_CMP_NE", SCMP_CMP_NE}, {"SCMP_CMP_LT", SCMP_CMP_LT}, {"SCMP_CMP_LE", SCMP_CMP_LE},
	   {"SCMP_CMP_EQ", SCMP_CMP_EQ}, {"SCMP_CMP_GE", SCMP_CMP_GE}, {"SCMP_CMP_GT", SCMP_CMP_GT},
	   {"SCMP_CMP_MASKED_EQ", SCMP_CMP_MASKED_EQ}};

static int op_of(const char *o, enum scmp_compare *ret)
{
	for (size_t i = 0; o && i < ARRAY_SIZE(ops); i++)
		if (streq(o, ops[i].n)) {
			*ret = ops[i].c;
			return 0;
		}
	return -EINVAL;
}

int runc_seccomp_load_spec(const json_t *sc, sbx_err **err)
{
	uint32_t dflt;
	int r = action_of(json_str(sc, "defaultAction"), json_int(sc, "defaultErrnoRet", EPERM), &dflt);
	if (r < 0)
		return err_errnum(err, -r, "defaultAction '%s'", json_str(sc, "defaultAction") ?: "(none)");
	_cleanup_(ctx_freep) scmp_filter_ctx ctx = seccomp_init(dflt);
	if (!ctx)
		return err_set(err, SBX_E_INTERNAL, ENOMEM, "seccomp_init");
	/* libseccomp would set no_new_privs itself; the spec decides that. */
	(void)seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
	json_t *archs = json_object_get(sc, "architectures"), *v;
	size_t i;
	json_array_foreach (archs, i, v) {
		const char *a = json_string_value(v);
		if (!a || !startswith(a, "SCMP_ARCH_"))
			continue;
		char lower[32];
		snprintf(lower, sizeof(lower), "%s", a + 10);
		for (char *c = lower; *c; c++)
			*c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
		uint32_t arch = seccomp_arch_resolve_name(lower);
		if (arch && arch != seccomp_arch_native())
			(void)seccomp_arch_add(ctx, arch);
	}
	json_t *calls = json_object_get(sc, "syscalls");
	json_array_foreach (calls, i, v) {
		uint32_t act;
		if ((r = action_of(json_str(v, "action"), json_int(v, "errnoRet", EPERM), &act)) < 0)
			return err_errnum(err, -r, "action '%s'", json_str(v, "action") ?: "(none)");
		if (act == dflt)
			continue;
		struct scmp_arg_cmp cmp[6];
		unsigned n_cmp = 0;
		json_t *args = json_object_get(v, "args"), *a;
		size_t k;
		json_array_foreach (args, k, a) {
			if (n_cmp == 6)
				break;
			enum scmp_compare op;
			if (op_of(json_str(a, "op"), &op) < 0)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "seccomp op '%s'", json_str(a, "op") ?: "");
			int64_t idx = json_int(a, "index", -1);
			if (idx < 0 || idx > 5)
				return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "seccomp arg index");
			cmp[n_cmp++] = (struct scmp_arg_cmp){.arg = (unsigned)idx, .op = op,
							     .datum_a = (scmp_datum_t)json_int(a, "value", 0),
							     .datum_b = (scmp_datum_t)json_int(a, "valueTwo", 0)};
		}
		json_t *names = json_object_get(v, "names"), *nm;
		size_t j;
		json_array_foreach (names, j, nm) {
			const char *name = json_string_value(nm);
			if (!name)
				continue;
			int nr = seccomp_syscall_resolve_name(name);
			if (nr == __NR_SCMP_ERROR)
				continue; /* not on this architecture or libseccomp: as runc does */
			r = seccomp_rule_add_array(ctx, act, nr, n_cmp, cmp);
			if (r < 0 && r != -EEXIST)
				return err_errnum(err, -r, "seccomp rule for '%s'", name);
		}
	}
	r = seccomp_load(ctx);
	if (r < 0)
		return err_errnum(err, -r, "seccomp_load");
	return 0;
}

/* features' linux.seccomp: what the parser above accepts, asked of it (the
 * actions and architectures of the runtime spec that it takes). */
json_t *runc_seccomp_features(void)
{
	static const char *const acts[] = {"SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO",	      "SCMP_ACT_KILL",
					   "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
					   "SCMP_ACT_NOTIFY",	    "SCMP_ACT_TRACE",	    "SCMP_ACT_TRAP"};
	static const char *const archs[] = {"x86", "x86_64", "x32", "arm", "aarch64", "mips", "mips64", "mipsel",
					    "mipsel64", "ppc", "ppc64", "ppc64le", "riscv64", "s390", "s390x"};
	json_t *j = json_pack("{s:b,s:[],s:[],s:[]}", "enabled", 1, "actions", "operators", "archs");
	if (!j)
		return NULL;
	uint32_t a;
	for (size_t i = 0; i < ARRAY_SIZE(acts); i++)
		if (action_of(acts[i], EPERM, &a) == 0)
			(void)json_array_append_new(json_object_get(j, "actions"), json_string(acts[i]));
	for (size_t i = 0; i < ARRAY_SIZE(ops); i++)
		(void)json_array_append_new(json_object_get(j, "operators"), json_string(ops[i].n));
	for (size_t i = 0; i < ARRAY_SIZE(archs); i++)
		if (seccomp_arch_resolve_name(archs[i])) {
			char n[32];
			snprintf(n, sizeof(n), "SCMP_ARCH_%s", archs[i]);
			for (char *c = n + 10; *c; c++)
				*c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
			(void)json_array_append_new(json_object_get(j, "archs"), json_string(n));
		}
	return j;
}

