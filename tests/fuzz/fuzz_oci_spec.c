/* libFuzzer target: sbx-runc's pure parsers (src/runc/oci_spec.h,
 * oci_state.h). The first byte picks the parser; the rest is its input.
 * Invariants checked on acceptance: args non-empty, cwd absolute, every
 * mount destination absolute, binds have a source; a state file formats
 * back to one that parses to the same pid. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "runc/oci_spec.h"
#include "runc/oci_state.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned which = data[0] % 5;
	const char *text = (const char *)data + 1;
	size_t len = size - 1;
	char *z = malloc(len + 1);
	if (!z)
		return 0;
	memcpy(z, text, len);
	z[len] = 0;
	sbx_err *e = NULL;
	if (which == 0) {
		oci_spec *s = NULL;
		if (oci_spec_parse(text, len, &s, &e) == 0) {
			if (!s->process.args || !s->process.args[0] || s->process.cwd[0] != '/' ||
			    !s->root_path)
				abort();
			for (size_t i = 0; i < s->n_mounts; i++)
				if (s->mounts[i].destination[0] != '/' ||
				    (s->mounts[i].bind && !s->mounts[i].source))
					abort();
			oci_spec_free(s);
		}
	} else if (which == 1) {
		oci_process p = {0};
		if (oci_process_parse(text, len, &p, &e) == 0)
			oci_process_done(&p);
	} else if (which == 2) {
		oci_resources r = {0};
		if (oci_resources_parse(text, len, &r, &e) == 0)
			oci_resources_done(&r);
	} else if (which == 3) {
		oci_state_rec r = {0};
		if (oci_state_parse(text, len, &r, &e) == 0) {
			char *t = oci_state_format(&r);
			oci_state_rec b = {0};
			if (!t || oci_state_parse(t, strlen(t), &b, NULL) < 0 || b.pid != r.pid)
				abort();
			free(t);
			oci_state_rec_done(&b);
			oci_state_rec_done(&r);
		}
	} else {
		char st;
		uint64_t t;
		(void)oci_proc_stat_parse(z, &st, &t);
		(void)oci_signal_parse(z);
		char *p = NULL;
		if (oci_cgroup_path(z, "id", len % 2, &p, NULL) == 0) {
			if (p[0] != '/' || strstr(p, "/../") || strstr(p, "/./"))
				abort();
			free(p);
		}
		(void)oci_id_valid(z);
	}
	sbx_err_free(e);
	free(z);
	return 0;
}
