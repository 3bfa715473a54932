/* libFuzzer target: envd's process.Process request messages (pure,
 * src/server/e2b_proc_util.h), the input as a JSON document: Start's
 * request, a ProcessSelector, a signal, a pty size, SendInput's bytes.
 * Whatever is accepted must hold together (argv ends, cwd absolute, sizes
 * in range). */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "server/e2b_proc_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *j = json_loadb((const char *)data, size, 0, NULL);
	if (!j)
		return 0;
	e2b_start_req r;
	if (e2b_start_parse(j, "/home/user", &r, NULL) == 0) {
		if (!r.argv || !r.argv[0] || !*r.argv[0] || !r.env || !r.cwd || r.cwd[0] != '/' || !r.config)
			abort();
		for (char **e = r.env; *e; e++)
			if (!strchr(*e, '=') || **e == '=')
				abort();
		if (r.pty &&
		    (r.cols < 1 || r.rows < 1 || r.cols > E2B_PTY_DIM_MAX || r.rows > E2B_PTY_DIM_MAX))
			abort();
		e2b_start_req_clear(&r);
	}
	e2b_selector s;
	if (e2b_selector_parse(j, "process", &s, NULL) == 0 && s.pid == 0 && (!s.tag || !*s.tag))
		abort();
	int sig;
	if (e2b_signal_parse(json_object_get(j, "signal"), &sig, NULL) == 0 && (sig < 1 || sig > 64))
		abort();
	uint16_t c, rw;
	if (e2b_pty_size_parse(j, "pty", &c, &rw, NULL) == 0 && (c < 1 || rw < 1))
		abort();
	unsigned char *buf;
	size_t len;
	bool pty;
	if (e2b_input_parse(j, &buf, &len, &pty, NULL) == 0) {
		if (!buf)
			abort();
		free(buf);
	}
	json_decref(j);
	return 0;
}
