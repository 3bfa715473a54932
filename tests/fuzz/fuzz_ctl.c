/* libFuzzer target: the supervisor's side of the control protocol, what it
 * parses from init and from the setup child (src/runtime/ctl_proto.c):
 * one SOCK_SEQPACKET message's bytes, loaded as json_recv loads them, then
 * decoded and, for a spawn failure, turned into the exec's error code; and
 * the same bytes as a client's proc_kill/proc_wait request (background
 * processes: a process id names a directory, so only p<number> may pass). */
#include <errno.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runtime/ctl_proto.h"
#include "util/json.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > CTL_MSG_MAX)
		return 0;
	json_t *m = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (!m)
		return 0;
	ctl_init_event e;
	int r = ctl_init_event_decode(m, &e);
	if (r < 0) {
		if (r != -EBADMSG || json_is_object(m))
			abort();
		json_decref(m);
		return 0;
	}
	if (e.kind > CTL_EVK_PHASE)
		abort();
	/* absent fields take the supervisor's defaults */
	if (!json_object_get(m, CTL_F_ID) && e.id != -1)
		abort();
	if (e.kind == CTL_EVK_SPAWN_FAILED && !json_object_get(m, CTL_F_ERRNO) && e.err != EIO)
		abort();
	sbx_code c = ctl_spawn_failed_code(&e);
	if (c < SBX_E_NOT_FOUND || c > SBX_E_INTERNAL)
		abort();
	/* borrowed strings and arrays stay readable while m lives (ASan checks) */
	size_t n = (e.code ? strlen(e.code) : 0) + (e.message ? strlen(e.message) : 0);
	(void)n;
	for (size_t i = 0; e.warnings && i < json_array_size(e.warnings); i++)
		(void)json_string_value(json_array_get(e.warnings, i));
	ctl_proc_request q = {.n = -1};
	if (ctl_proc_request_decode(m, &q) == 0) {
		char want[32];
		snprintf(want, sizeof(want), "p%lld", (long long)q.n);
		const char *got = json_str(m, CTL_F_PROCESS_ID);
		if (q.n < 1 || q.n > CTL_PROC_MAX || q.sig < 1 || q.sig > 64 || !got ||
		    strcmp(got, want) != 0)
			abort();
	} else if (q.n != -1)
		abort(); /* written only on success */
	json_decref(m);
	return 0;
}
