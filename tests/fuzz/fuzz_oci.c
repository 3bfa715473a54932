/* libFuzzer target: OCI JSON parsing (pure): the first byte picks the parser
 * (index.json / image index, image manifest, image config, oci:DIR[:TAG]
 * refs), the rest is the document. Accepted documents must satisfy the
 * invariants the importer relies on: every digest is sha256 + 64 lowercase
 * hex (blob paths are built only from it), sizes are non-negative, at most
 * OCI_MAX_LAYERS layers and diff_ids, Env entries are KEY=value. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/oci.h"
#include "util/err.h"

static void check_desc(const oci_descriptor *d)
{
	if (!store_digest_valid(d->digest) || d->size < 0)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	uint8_t sel = data[0] % 4;
	const char *doc = (const char *)data + 1;
	size_t len = size - 1;
	sbx_err *e = NULL;
	if (sel == 0) {
		oci_index *ix = NULL;
		if (oci_index_parse(doc, len, &ix, &e) == 0) {
			for (size_t i = 0; i < ix->n; i++)
				check_desc(&ix->manifests[i]);
			const oci_descriptor *d = NULL;
			if (oci_index_select(ix, "latest", "amd64", &d, NULL) == 0 &&
			    (d < ix->manifests || d >= ix->manifests + ix->n))
				abort();
			if (oci_index_select(ix, NULL, "amd64", &d, NULL) == 0)
				check_desc(d);
			oci_index_free(ix);
		}
	} else if (sel == 1) {
		oci_manifest *m = NULL;
		if (oci_manifest_parse(doc, len, &m, &e) == 0) {
			check_desc(&m->config);
			if (m->n_layers > OCI_MAX_LAYERS)
				abort();
			for (size_t i = 0; i < m->n_layers; i++) {
				check_desc(&m->layers[i]);
				if (m->comp[i] > OCI_COMP_ZSTD)
					abort();
			}
			oci_manifest_free(m);
		}
	} else if (sel == 2) {
		oci_config *c = NULL;
		if (oci_config_parse(doc, len, &c, &e) == 0) {
			if (c->n_diff_ids > OCI_MAX_LAYERS || !c->env)
				abort();
			for (size_t i = 0; i < c->n_diff_ids; i++)
				if (!store_digest_valid(c->diff_ids[i]))
					abort();
			for (char **p = c->env; *p; p++)
				if (!strchr(*p, '=') || **p == '=')
					abort();
			if (c->cwd && c->cwd[0] && c->cwd[0] != '/')
				abort();
			oci_config_free(c);
		}
	} else {
		char *s = malloc(len + 1);
		if (!s)
			return 0;
		memcpy(s, doc, len);
		s[len] = 0;
		char *dir = NULL, *tag = NULL;
		if (oci_ref_parse(s, &dir, &tag, &e) == 0) {
			if (!dir[0] || (tag && !oci_tag_valid(tag)))
				abort();
			free(dir);
			free(tag);
		}
		free(s);
	}
	sbx_err_free(e);
	return 0;
}
