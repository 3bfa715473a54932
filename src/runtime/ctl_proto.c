/* The control protocol's decoding (ctl_proto.h). Pure. */
#include "runtime/ctl_proto.h"

#include <errno.h>
#include <signal.h>
#include <string.h>

#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

static const struct {
	const char *name;
	ctl_ev_kind kind;
} ev_kinds[] = {
    {CTL_EV_ERROR, CTL_EVK_ERROR},     {CTL_EV_READY, CTL_EVK_READY},
    {CTL_EV_SPAWNED, CTL_EVK_SPAWNED}, {CTL_EV_SPAWN_FAILED, CTL_EVK_SPAWN_FAILED},
    {CTL_EV_EXITED, CTL_EVK_EXITED},   {CTL_EV_PS, CTL_EVK_PS},
    {CTL_EV_FILE, CTL_EVK_FILE},       {CTL_EV_STOP_ALL, CTL_EVK_STOP_ALL},
    {CTL_EV_PHASE, CTL_EVK_PHASE},
};

ctl_ev_kind ctl_ev_kind_of(const char *ev)
{
	for (size_t i = 0; ev && i < ARRAY_SIZE(ev_kinds); i++)
		if (streq(ev, ev_kinds[i].name))
			return ev_kinds[i].kind;
	return CTL_EVK_UNKNOWN;
}

int ctl_init_event_decode(const json_t *m, ctl_init_event *ret)
{
	if (!json_is_object(m))
		return -EBADMSG;
	ctl_init_event e = {.kind = ctl_ev_kind_of(json_str(m, CTL_F_EV))};
	e.id = json_int(m, CTL_F_ID, -1);
	e.pid = json_int(m, CTL_F_PID, 0);
	e.status = (int)json_int(m, CTL_F_STATUS, 0);
	e.err = (int)json_int(m, CTL_F_ERRNO, e.kind == CTL_EVK_SPAWN_FAILED ? EIO : 0);
	e.stage = (int)json_int(m, CTL_F_STAGE, 0);
	e.landlock_abi = (int)json_int(m, CTL_F_LANDLOCK_ABI, 0);
	e.ok = json_bool(m, CTL_F_OK, false);
	e.code = json_str(m, CTL_F_CODE);
	e.message = json_str(m, CTL_F_MESSAGE);
	e.warnings = json_object_get(m, CTL_F_WARNINGS);
	*ret = e;
	return 0;
}

sbx_code ctl_spawn_failed_code(const ctl_init_event *e)
{
	int en = e->err, stage = e->stage;
	return stage == 3 && e->code			       ? err_code_from_name(e->code) /* user */
	       : stage == 0 && en == ENOENT		       ? SBX_E_NOT_FOUND
	       : stage == 0 && (en == EACCES || en == ENOEXEC) ? SBX_E_INVALID_ARGUMENT
	       : stage == 1				       ? SBX_E_INVALID_ARGUMENT
	       : en == EAGAIN				       ? SBX_E_LIMIT_EXCEEDED
							       : SBX_E_INTERNAL;
}

int64_t ctl_proc_id_parse(const char *s)
{
	if (!s || s[0] != 'p' || s[1] < '1' || s[1] > '9')
		return -EINVAL;
	int64_t n = 0;
	for (const char *p = s + 1; *p; p++) {
		if (*p < '0' || *p > '9' || p - s > 9)
			return -EINVAL;
		n = n * 10 + (*p - '0');
	}
	return n <= CTL_PROC_MAX ? n : -EINVAL;
}

int ctl_proc_request_decode(const json_t *m, ctl_proc_request *ret)
{
	if (!json_is_object(m))
		return -EBADMSG;
	int64_t n = ctl_proc_id_parse(json_str(m, CTL_F_PROCESS_ID));
	if (n < 0)
		return -EINVAL;
	json_t *sig = json_object_get(m, CTL_F_SIG);
	int64_t sg = SIGTERM;
	if (sig) {
		if (!json_is_integer(sig))
			return -EINVAL;
		sg = json_integer_value(sig);
		if (sg < 1 || sg > 64)
			return -EINVAL;
	}
	*ret = (ctl_proc_request){.n = n, .sig = (int)sg};
	return 0;
}
