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

/* Background process ids name directories: nothing but p<number> passes. */
TEST(proc_ids)
{
	CHECK(ctl_proc_id_parse("p1") == 1);
	CHECK(ctl_proc_id_parse("p42") == 42);
	CHECK(ctl_proc_id_parse("p999999999") == 999999999);
	const char *bad[] = {NULL,  "",	   "p",	    "p0",    "p01", "1",	   "P1",
			     "p1x", "p-1", "p1/..", "../p1", "p 1", "p1000000000", "p99999999999999999999"};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++)
		CHECK(ctl_proc_id_parse(bad[i]) == -EINVAL);
}

static int proc_req(const char *s, ctl_proc_request *q)
{
	_cleanup_json_ json_t *m = json_loads(s, 0, NULL);
	return ctl_proc_request_decode(m, q);
}

TEST(proc_requests)
{
	ctl_proc_request q = {.n = -7};
	CHECK(proc_req("{\"op\":\"proc_kill\",\"process_id\":\"p3\"}", &q) == 0 && q.n == 3 && q.sig == 15);
	CHECK(proc_req("{\"process_id\":\"p3\",\"sig\":9}", &q) == 0 && q.sig == 9);
	q.n = -7;
	CHECK(proc_req("{\"process_id\":\"p3\",\"sig\":0}", &q) == -EINVAL && q.n == -7);
	CHECK(proc_req("{\"process_id\":\"p3\",\"sig\":65}", &q) == -EINVAL);
	CHECK(proc_req("{\"process_id\":\"p3\",\"sig\":\"9\"}", &q) == -EINVAL);
	CHECK(proc_req("{\"process_id\":3}", &q) == -EINVAL);
	CHECK(proc_req("{}", &q) == -EINVAL);
	CHECK(proc_req("[]", &q) == -EBADMSG);
	CHECK(ctl_proc_request_decode(NULL, &q) == -EBADMSG);
}
