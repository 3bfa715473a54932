/* libFuzzer target: a code run's events (src/api/code_events.h), the NDJSON
 * that the code interpreter's bridge inside an environment streams. The
 * input is fed in pieces whose size its first byte picks, under a cap its
 * second byte picks. Checked: no crash or leak (ASan, UBSan); the result
 * builds; every event passed on has a type; a stream that went past its
 * cap says truncated. Built and run by tests/fuzz/run;
 * tests/fuzz/corpus/code_events holds the seeds. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/code_events.h"

static void on_event(const json_t *ev, void *ud)
{
	if (!json_is_string(json_object_get(ev, "type")))
		abort();
	(*(int *)ud)++;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	size_t step = data[0] % 16 + 1;
	int64_t cap = data[1] & 1 ? (int64_t)(data[1] * 8) : 1 << 20;
	data += 2;
	size -= 2;
	code_events s;
	int events = 0;
	if (code_events_init(&s, cap, 1000, on_event, &events) < 0)
		return 0;
	size_t off = 0;
	while (off < size) {
		size_t n = step < size - off ? step : size - off;
		if (code_events_feed(&s, (const char *)data + off, n) < 0)
			break;
		off += n;
	}
	if ((int64_t)size > cap && !s.truncated && !s.bad)
		abort();
	json_t *r = code_events_result(&s, 0);
	if (!r && !s.bad)
		abort();
	json_decref(r);
	code_events_free(&s);
	return 0;
}
