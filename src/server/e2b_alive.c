/* Whether an E2B sandbox still runs, as the data plane sees it (e2b_data.h). */
#include <time.h>

#include "server/e2b_data.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

int e2b_sandbox_state(sbx_ctx *ctx, const char *id)
{
	_cleanup_json_ json_t *info = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_inspect(ctx, id, &info, &e) < 0)
		return sbx_err_code(e) == SBX_E_NOT_FOUND ? 0 : -1;
	return streq(json_str(info, "environment_id") ?: "", id) &&
	       streq(json_str(info, "state") ?: "", "running");
}

bool e2b_sandbox_gone_within(sbx_ctx *ctx, const char *id, int max_ms)
{
	enum { POLL_MS = 50 };
	for (int waited = 0;; waited += POLL_MS) {
		if (e2b_sandbox_state(ctx, id) == 0)
			return true;
		if (waited >= max_ms)
			return false;
		struct timespec d = {.tv_nsec = POLL_MS * 1000000L};
		nanosleep(&d, NULL);
	}
}
