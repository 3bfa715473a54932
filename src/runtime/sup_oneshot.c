/* One-shot environments, the supervisor's side (runtime.h one_shot; sbx
 * run, a pool's take): the environment is removed with its owner, by this
 * supervisor (sup_oneshot_dispose); a pool entry is bound to the taker
 * that owns it (CTL_OP_OWN) and handed out, as an ordinary environment,
 * shortly after (sup_oneshot_handout, from the loop's deadline). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "runtime/ctl_proto.h"
#include "runtime/startup_trace.h"
#include "runtime/sup_internal.h"
#include "util/clock.h"
#include "util/log.h"

/* One-shot (runtime.h): removes the environment (the API's dispose), and
 * the pool claim this supervisor made for its owner. */
void sup_oneshot_dispose(supervisor *s)
{
	if (!s->c->one_shot || !s->c->dispose)
		return;
	s->c->dispose(s->c->dispose_arg, s->c->id);
	if (s->c->pool_claim)
		(void)unlink(s->c->pool_claim);
	startup_mark("teardown: files removed (one-shot)");
}

/* How long after a one-shot take its hand-out comes (sup_oneshot_own). */
#define HANDOUT_DELAY_MS 5

/* CTL_OP_OWN: a one-shot create's take of this pool entry. The claim (the
 * token's rename) and the ownership are one step here, so that the taker
 * dying at any moment leaves the entry either in the pool or owned (and
 * then removed with its owner). */
bool sup_oneshot_own(supervisor *s, int conn, int *fds, size_t n_fds)
{
	_cleanup_err_ sbx_err *e = NULL;
	env_config *c = s->c;
	if (n_fds != 1 || !c->pool_token || !c->pool_claim)
		err_set(&e, SBX_E_INVALID_ARGUMENT, EINVAL, "own: not a pool entry, or no pidfd");
	else if (c->one_shot)
		err_set(&e, SBX_E_CONFLICT, EBUSY, "own: the entry is owned already");
	else if (rename(c->pool_token, c->pool_claim) < 0)
		err_set(&e, errno == ENOENT ? SBX_E_CONFLICT : SBX_E_INTERNAL, errno,
			"own: claim the pool entry: %s", strerror(errno));
	else if ((c->owner_fd = fcntl(fds[0], F_DUPFD_CLOEXEC, 3)) < 0) {
		err_errno(&e, "own: dup");
		(void)rename(c->pool_claim, c->pool_token); /* back in the pool */
	}
	if (e) {
		sup_send_json(conn, sup_err_json(e), NULL, 0);
		return false;
	}
	c->one_shot = true;
	sup_ep_add(s, c->owner_fd);
	sup_send_json(conn, json_pack("{s:s,s:O?}", CTL_F_EV, CTL_EV_OWNED, CTL_F_WARNINGS, s->warnings),
		      NULL, 0);
	/* The hand-out (the entry's state rewritten as an ordinary environment)
	 * comes HANDOUT_DELAY_MS later, off the taker's way: its first command
	 * comes on this connection, which stays open for it, and a command
	 * that ends sooner (sbx run -- true) ends the one-shot environment
	 * before anyone could list it, so its hand-out is never written. */
	if (c->handout) {
		s->handout_taken_ms = clock_ms(CLOCK_REALTIME);
		s->handout_due_ms = clock_ms(CLOCK_MONOTONIC) + HANDOUT_DELAY_MS;
	}
	return true;
}

/* The pending hand-out, if any (sup_oneshot_own). */
void sup_oneshot_handout(supervisor *s)
{
	if (!s->handout_taken_ms)
		return;
	int64_t taken = s->handout_taken_ms;
	s->handout_taken_ms = 0;
	if (s->stopping)
		return; /* being removed: nothing to hand out */
	if (s->c->handout(s->c->dispose_arg, s->c->id, taken) < 0)
		log_debug("pool: hand-out of %s: its state was not rewritten", s->c->id);
	if (s->c->pool_claim)
		(void)unlink(s->c->pool_claim); /* handed out */
	startup_mark("supervisor: handed out");
}
