/* sbx_trace_html: the data of the page (src/trace/trace_html.c draws it),
 * gathered through the trace readers: events, stats, manifest. */
#include <errno.h>
#include <stdio.h>

#include "api/api.h"
#include "trace/trace_html.h"
#include "util/json.h"
#include "util/macro.h"

_public_ int sbx_trace_html(sbx_ctx *ctx, const char *ref, const json_t *replay, FILE *out, sbx_err **err)
{
	_cleanup_json_ json_t *ev = NULL, *stats = NULL, *man = NULL;
	if (sbx_trace_events_json(ctx, ref, NULL, &ev, err) < 0 ||
	    sbx_trace_stats(ctx, ref, &stats, err) < 0 || sbx_trace_manifest(ctx, ref, &man, err) < 0)
		return err_wrap(err, "trace html");
	_cleanup_json_ json_t *trace =
	    json_pack("{s:O?,s:O,s:O,s:O}", "trace_id", json_object_get(ev, "trace_id"), "manifest", man,
		      "stats", stats, "events", json_object_get(ev, "events"));
	if (!trace)
		return err_oom(err);
	_cleanup_json_ json_t *rep = NULL, *rev = NULL;
	if (replay) {
		/* The replay's own trace, when it was kept; without it only the verdict is shown. */
		const char *rid = json_str(replay, "replay_trace_id");
		if (rid)
			(void)sbx_trace_events_json(ctx, rid, NULL, &rev, NULL);
		rep = json_pack("{s:O,s:O?}", "result", replay, "events",
				rev ? json_object_get(rev, "events") : NULL);
		if (!rep)
			return err_oom(err);
	}
	return trace_html_write(trace, rep, out, err);
}
