/* sbx diff | fsck */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

typedef struct line {
	char kind;
	const char *path;
} line;

static int line_cmp(const void *a, const void *b)
{
	const line *x = a, *y = b;
	int c = strcmp(x->path, y->path);
	return c ? c : x->kind - y->kind;
}

/* One line of the text diff. The names come from inside the environment:
 * one holding a newline would forge a line, an escape character would
 * reach the terminal. The library already writes a backslash as two and
 * each byte that is not UTF-8 as backslash-x-NN (docs/store.md); here the
 * control bytes (0x00-0x1f, 0x7f) are written as backslash-x-NN too,
 * which no name can print otherwise. */
static void print_path_line(char kind, const char *path)
{
	printf("%c ", kind);
	for (const unsigned char *q = (const unsigned char *)path; *q; q++)
		if (*q < 0x20 || *q == 0x7f)
			printf("\\x%02x", *q);
		else
			putchar(*q);
	putchar('\n');
}

int cmd_diff(cli *c, int argc, char **argv)
{
	const char *pos[2] = {0};
	int n_pos, r = cli_args("diff", argc, argv, pos, 2, &n_pos);
	if (r)
		return r;
	if (n_pos > 2)
		return cli_usage_error("diff", "too many arguments");
	if (n_pos < 1)
		return cli_usage_error("diff", "expected: sbx diff ID [SNAPSHOT]");
	const char *id = pos[0], *snap = pos[1];
	r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_env_diff(c->ctx, id, snap, &j, &e) < 0)
		return cli_fail("diff", e);
	if (c->json) {
		cli_print_json(j);
		return 0;
	}
	static const struct {
		const char *key;
		char kind;
	} kinds[] = {{"added", 'A'}, {"modified", 'M'}, {"deleted", 'D'}};
	size_t n = 0;
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
		n += json_array_size(json_object_get(j, kinds[k].key));
	line *v = calloc(n + 1, sizeof(*v));
	if (!v) {
		json_decref(j);
		fprintf(stderr, "sbx: diff: out of memory\n");
		return EXIT_SBX;
	}
	n = 0;
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		size_t i;
		json_t *p;
		json_array_foreach(json_object_get(j, kinds[k].key), i, p)
		{
			v[n++] = (line){kinds[k].kind, json_string_value(p) ?: ""};
		}
	}
	qsort(v, n, sizeof(*v), line_cmp);
	for (size_t i = 0; i < n; i++)
		print_path_line(v[i].kind, v[i].path);
	free(v);
	json_decref(j);
	return 0;
}

int cmd_fsck(cli *c, int argc, char **argv)
{
	const char *pos[1];
	int n, r = cli_args("fsck", argc, argv, pos, 1, &n);
	if (r)
		return r;
	if (n > 0)
		return cli_usage_error("fsck", "unexpected argument '%s'", pos[0]);
	r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_fsck(c->ctx, &j, &e) < 0)
		return cli_fail("fsck", e);
	bool ok = json_is_true(json_object_get(j, "ok"));
	if (c->json) {
		cli_print_json(j);
		return ok ? 0 : 1;
	}
	size_t i;
	json_t *p;
	json_array_foreach(json_object_get(j, "problems"), i, p)
	{
		printf("corrupt %s: %s\n", json_string_value(json_object_get(p, "object")) ?: "?",
		       json_string_value(json_object_get(p, "problem")) ?: "?");
	}
	if (ok)
		printf("ok: %lld layer(s), %lld snapshot(s), %lld label(s), %lld trace(s) verified\n",
		       (long long)json_integer_value(json_object_get(j, "layers")),
		       (long long)json_integer_value(json_object_get(j, "snapshots")),
		       (long long)json_integer_value(json_object_get(j, "refs")),
		       (long long)json_integer_value(json_object_get(j, "traces")));
	json_decref(j);
	return ok ? 0 : 1;
}
