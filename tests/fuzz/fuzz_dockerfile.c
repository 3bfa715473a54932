/* libFuzzer target: the Dockerfile parser, substitution and .dockerignore (pure). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "build/dockerfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	dockerfile *d = NULL;
	sbx_err *e = NULL;
	if (dockerfile_parse((const char *)data, size, "Dockerfile", &d, &e) == 0) {
		/* Accepted files start with FROM (after ARGs) and every instruction has text. */
		if (!d->n || !d->instr[0].text)
			abort();
		const char *vars[] = {"A=1", "B=x y", NULL};
		for (size_t i = 0; i < d->n; i++) {
			char *o = NULL, **v = NULL;
			sbx_err *e2 = NULL;
			if (!d->instr[i].args || !*d->instr[i].args)
				abort();
			if (dockerfile_expand(d->instr[i].args, vars, d->escape, &o, &e2) == 0 && !o)
				abort();
			free(o);
			sbx_err_free(e2);
			e2 = NULL;
			if (dockerfile_pairs(d->instr[i].args, true, d->escape, &v, &e2) == 0)
				for (size_t k = 0; v[k]; k++)
					if (!strchr(v[k], '='))
						abort();
			strv_free(v);
			v = NULL;
			sbx_err_free(e2);
			e2 = NULL;
			if (dockerfile_words(d->instr[i].args, d->escape, &v, &e2) == 0 && (!v[0] || !v[1]))
				abort();
			strv_free(v);
			sbx_err_free(e2);
		}
	}
	dockerfile_free(d);
	sbx_err_free(e);
	char **p = NULL;
	if (dockerignore_parse((const char *)data, size, &p, NULL) == 0) {
		char path[64];
		size_t n = size < sizeof path - 1 ? size : sizeof path - 1;
		memcpy(path, data, n);
		path[n] = 0;
		(void)dockerignore_excluded((const char *const *)p, path);
		(void)dockerignore_excluded((const char *const *)p, "a/b/c");
	}
	strv_free(p);
	return 0;
}
