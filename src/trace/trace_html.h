/* The trace as one self-contained HTML page (sbx trace html): the process
 * tree, a timeline per process of its system calls coloured by kind (file,
 * network, process, time, random, other), the files read and written, the
 * read set, and for a replay the first divergence highlighted, with the
 * replay's own timeline beside the recording's. No network, no external
 * script or style: the data is embedded as JSON, the script and style are
 * inline. Large traces stay usable: the timeline aggregates what falls
 * below a pixel (the column shows its dominant kind and a count) and a
 * click lists the events of that column. When its script has run the page
 * carries <div id="sbx-done" data-processes="N" data-events="M">; a script
 * error becomes <div id="sbx-error">. Pure: JSON in, text out. */
#pragma once
#include <jansson.h>
#include <stdio.h>

#include "util/err.h"

/* The compact event list the page draws: [seq, t_ns, pid, tid, type, name,
 * dur_ns, text] per event of trace_show_json's array (text: the call as
 * `trace show` prints it, at most 240 bytes). A new reference, NULL on ENOMEM. */
json_t *trace_html_events(const json_t *events);

/* Writes the page. trace: {trace_id, manifest, stats, events (trace_show_json's
 * array)}; replay: NULL, or {result (sbx_trace_replay's), events (of
 * replay_trace_id, or NULL)}. */
int trace_html_write(const json_t *trace, const json_t *replay, FILE *out, sbx_err **err);
