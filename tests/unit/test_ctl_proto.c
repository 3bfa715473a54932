/* Unit tests: src/runtime/ctl_proto.c, the supervisor's decoding of init's
 * events (pure). */
#include <errno.h>
#include <string.h>

#include "runtime/ctl_proto.h"
#include "unit.h"
#include "util/json.h"
#include "util/macro.h"

/* Decodes s; kind -1 when it does not decode. */
static ctl_init_event decode(const char *s)
{
	_cleanup_json_ json_t *m = json_loads(s, 0, NULL);
	ctl_init_event e = {.kind = -1};
	if (!m || ctl_init_event_decode(m, &e) < 0)
		return (ctl_init_event){.kind = -1};
	e.code = e.message = NULL; /* borrowed from m, gone */
	e.warnings = NULL;
	return e;
}

TEST(event_kinds_and_defaults)
{
	ctl_init_event e = decode("{\"ev\":\"spawned\",\"id\":7,\"pid\":42}");
	CHECK(e.kind == CTL_EVK_SPAWNED && e.id == 7 && e.pid == 42);
	e = decode("{\"ev\":\"exited\",\"id\":7,\"status\":9}");
	CHECK(e.kind == CTL_EVK_EXITED && e.status == 9);
	e = decode("{\"ev\":\"spawn_failed\"}");
	CHECK(e.kind == CTL_EVK_SPAWN_FAILED && e.id == -1 && e.err == EIO && e.stage == 0);
	e = decode("{\"ev\":\"error\"}");
	CHECK(e.kind == CTL_EVK_ERROR && e.err == 0);
	e = decode("{\"ev\":\"bogus\",\"id\":\"x\"}");
	CHECK(e.kind == CTL_EVK_UNKNOWN && e.id == -1);
	CHECK(ctl_ev_kind_of(NULL) == CTL_EVK_UNKNOWN && ctl_ev_kind_of("ready") == CTL_EVK_READY);
	_cleanup_json_ json_t *a = json_array();
	ctl_init_event x;
	CHECK(ctl_init_event_decode(a, &x) == -EBADMSG);
}

TEST(spawn_failed_codes)
{
	ctl_init_event e = {.kind = CTL_EVK_SPAWN_FAILED, .err = ENOENT};
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_NOT_FOUND);
	e.err = EACCES;
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_INVALID_ARGUMENT);
	e.err = ENOEXEC;
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_INVALID_ARGUMENT);
	e.err = EAGAIN;
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_LIMIT_EXCEEDED);
	e.err = EIO;
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_INTERNAL);
	e = (ctl_init_event){.stage = 1, .err = ENOENT}; /* the cwd */
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_INVALID_ARGUMENT);
	e = (ctl_init_event){.stage = 2, .err = ENOENT};
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_INTERNAL);
	e = (ctl_init_event){.stage = 3, .code = "not_found"}; /* the user: what init said */
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_NOT_FOUND);
	e.code = NULL;
	e.err = EAGAIN;
	CHECK(ctl_spawn_failed_code(&e) == SBX_E_LIMIT_EXCEEDED);
}
