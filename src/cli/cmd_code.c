/* sbx code: run code in a stateful kernel of an environment, and manage its
 * contexts (docs/code.md). Output streams as it comes: stdout and stderr
 * text to the CLI's own, results as text (images written to --out DIR), an
 * error's traceback to stderr. Exit status: 0, 1 when the cell raised, 124
 * when it timed out (as timeout(1)), 125 for sbx errors. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/dsse.h"
#include "util/macro.h"

#define EXIT_RAISED 1
#define EXIT_TIMEOUT 124
#define CODE_STDIN_MAX (16 << 20)

typedef struct code_out {
	const char *dir; /* --out */
	int n_images;
	bool hinted;
} code_out;

/* Writes an image result to DIR/out-N.EXT; png and jpeg come base64. */
static int write_image(code_out *w, const char *ext, const char *data, bool b64, char *path, size_t n)
{
	_cleanup_free_ unsigned char *bin = NULL;
	size_t len = strlen(data);
	if (b64) {
		/* Jupyter's base64 may carry line breaks; the decoder takes none. */
		_cleanup_free_ char *flat = malloc(len + 1);
		size_t k = 0;
		if (!flat)
			return -1;
		for (size_t i = 0; i < len; i++)
			if (data[i] != '\n' && data[i] != '\r')
				flat[k++] = data[i];
		if (dsse_b64_decode(flat, k, 256 << 20, &bin, &len, NULL) < 0)
			return -1;
		data = (const char *)bin;
	}
	snprintf(path, n, "%s/out-%d.%s", w->dir, ++w->n_images, ext);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	size_t off = 0;
	while (off < len) {
		ssize_t m = write(fd, data + off, len - off);
		if (m < 0 && errno == EINTR)
			continue;
		if (m < 0) {
			close(fd);
			return -1;
		}
		off += (size_t)m;
	}
	return close(fd);
}

static void print_result(code_out *w, const json_t *ev)
{
	static const struct {
		const char *field, *mime, *ext;
		bool b64;
	} images[] = {{"png", "image/png", "png", true},
		      {"jpeg", "image/jpeg", "jpg", true},
		      {"svg", "image/svg+xml", "svg", false}};
	bool image = false;
	for (size_t i = 0; i < ARRAY_SIZE(images); i++) {
		const char *data = json_string_value(json_object_get(ev, images[i].field));
		if (!data)
			continue;
		image = true;
		char path[4096];
		if (!w->dir) {
			printf("[%s produced; sbx code --out DIR writes it to a file, --json shows it as "
			       "base64]\n",
			       images[i].mime);
		} else if (write_image(w, images[i].ext, data, images[i].b64, path, sizeof(path)) < 0)
			fprintf(stderr, "sbx: code: write %s to '%s': %s\n", images[i].mime, w->dir,
				strerror(errno ? errno : EINVAL));
		else
			printf("[%s written to %s]\n", images[i].mime, path);
		break;
	}
	const char *text = json_string_value(json_object_get(ev, "text"));
	if (image)
		return;
	if (text) {
		fputs(text, stdout);
		if (*text && text[strlen(text) - 1] != '\n')
			putchar('\n');
	} else
		printf("[a result without text: --json shows it]\n");
}

static void on_event(const json_t *ev, void *ud)
{
	code_out *w = ud;
	const char *type = json_string_value(json_object_get(ev, "type"));
	const char *text = json_string_value(json_object_get(ev, "text"));
	if (!type)
		return;
	if (streq(type, "stdout") && text) {
		fputs(text, stdout);
		fflush(stdout);
	} else if (streq(type, "stderr") && text) {
		fflush(stdout);
		fputs(text, stderr);
	} else if (streq(type, "result")) {
		print_result(w, ev);
		fflush(stdout);
	} else if (streq(type, "error")) {
		fflush(stdout);
		const char *tb = json_string_value(json_object_get(ev, "traceback"));
		if (tb && *tb)
			fprintf(stderr, "%s\n", tb);
		else
			fprintf(stderr, "%s: %s\n", json_string_value(json_object_get(ev, "name")) ?: "Error",
				json_string_value(json_object_get(ev, "value")) ?: "");
	} else if (streq(type, "timeout")) {
		fflush(stdout);
		fprintf(stderr,
			"sbx: code: timed out after %lld ms: the cell was interrupted, its context kept\n",
			(long long)json_integer_value(json_object_get(ev, "timeout_ms")));
	} else if (streq(type, "truncated")) {
		fflush(stdout);
		fprintf(stderr, "sbx: code: output past the limit was dropped\n");
	}
}

/* The code: the words after -- joined by spaces, else stdin. */
static int read_code(char **tail, int n_tail, char **ret)
{
	size_t len = 0, cap = 0;
	char *s = NULL;
	if (n_tail > 0) {
		for (int i = 0; i < n_tail; i++)
			len += strlen(tail[i]) + 1;
		s = malloc(len + 1);
		if (!s)
			return -1;
		s[0] = 0;
		for (int i = 0; i < n_tail; i++) {
			if (i)
				strcat(s, " ");
			strcat(s, tail[i]);
		}
		*ret = s;
		return 0;
	}
	if (isatty(0))
		return -2;
	for (;;) {
		if (len + 65536 + 1 > cap) {
			cap = cap ? cap * 2 : 65536 * 2;
			char *b = realloc(s, cap);
			if (!b) {
				free(s);
				return -1;
			}
			s = b;
		}
		ssize_t n = read(0, s + len, cap - len - 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			free(s);
			return -1;
		}
		if (n == 0)
			break;
		len += (size_t)n;
		if (len > CODE_STDIN_MAX) {
			free(s);
			return -3;
		}
	}
	s[len] = 0;
	*ret = s;
	return 0;
}

static void print_contexts(const json_t *list)
{
	printf("%-36s %-12s %s\n", "CONTEXT", "LANGUAGE", "CWD");
	size_t i;
	json_t *v;
	json_array_foreach(json_object_get(list, "contexts"), i, v)
	{
		printf("%-36s %-12s %s\n", json_string_value(json_object_get(v, "context_id")) ?: "?",
		       json_string_value(json_object_get(v, "language")) ?: "?",
		       json_string_value(json_object_get(v, "cwd")) ?: "?");
	}
}

enum {
	OPT_CONTEXT = 1000,
	OPT_LANG,
	OPT_TIMEOUT,
	OPT_ENV,
	OPT_OUT,
	OPT_CONTEXTS,
	OPT_NEW,
	OPT_CWD,
	OPT_RESTART,
	OPT_REMOVE
};

/* --contexts, --new-context, --restart C, --remove C */
static int context_command(cli *c, const char *id, int op, const char *arg, const char *lang, const char *cwd)
{
	json_t *j = NULL;
	sbx_err *e = NULL;
	int r = 0;
	if (op == OPT_CONTEXTS)
		r = sbx_context_list(c->ctx, id, &j, &e);
	else if (op == OPT_NEW)
		r = sbx_context_create(c->ctx, id, lang, cwd, &j, &e);
	else if (op == OPT_RESTART)
		r = sbx_context_restart(c->ctx, id, arg, &e);
	else
		r = sbx_context_remove(c->ctx, id, arg, &e);
	if (r < 0)
		return cli_fail("code", e);
	if (c->json)
		cli_print_json(j ? j : json_pack("{s:s}", "context_id", arg));
	else if (op == OPT_CONTEXTS)
		print_contexts(j);
	else if (op == OPT_NEW)
		printf("%s\n", json_string_value(json_object_get(j, "context_id")));
	if (!c->json)
		json_decref(j);
	return 0;
}

int cmd_code(cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {{"context", required_argument, NULL, OPT_CONTEXT},
						 {"lang", required_argument, NULL, OPT_LANG},
						 {"timeout", required_argument, NULL, OPT_TIMEOUT},
						 {"env", required_argument, NULL, OPT_ENV},
						 {"out", required_argument, NULL, OPT_OUT},
						 {"contexts", no_argument, NULL, OPT_CONTEXTS},
						 {"new-context", no_argument, NULL, OPT_NEW},
						 {"cwd", required_argument, NULL, OPT_CWD},
						 {"restart", required_argument, NULL, OPT_RESTART},
						 {"remove", required_argument, NULL, OPT_REMOVE},
						 {0}};
	cli_opts p = {.cmd = "code", .shortopts = "e:", .longopts = longopts, .tail_after = 1};
	const char *id = NULL, *context = NULL, *lang = NULL, *cwd = NULL, *op_arg = NULL;
	int op = 0, n_env = 0, o;
	_cleanup_free_ const char **env = calloc((size_t)argc + 1, sizeof(*env));
	code_out w = {0};
	int64_t timeout_ms = 0;
	if (!env)
		return EXIT_SBX;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		sbx_err *e = NULL;
		switch (o) {
		case CLI_ERR:
			return EXIT_SBX;
		case OPT_CONTEXT:
			context = p.arg;
			break;
		case OPT_LANG:
			lang = p.arg;
			break;
		case OPT_TIMEOUT:
			if (sbx_parse_duration(p.arg, &timeout_ms, &e) < 0)
				return cli_fail("code", e);
			if (timeout_ms <= 0)
				return cli_usage_error("code", "--timeout must be positive");
			break;
		case 'e':
		case OPT_ENV:
			env[n_env++] = p.arg;
			break;
		case OPT_OUT:
			w.dir = p.arg;
			break;
		case OPT_CWD:
			cwd = p.arg;
			break;
		case OPT_CONTEXTS:
		case OPT_NEW:
		case OPT_RESTART:
		case OPT_REMOVE:
			if (op)
				return cli_usage_error(
				    "code", "--contexts, --new-context, --restart and --remove go alone");
			op = o;
			op_arg = p.arg;
			break;
		case CLI_ARG:
			if (id)
				return cli_usage_error(
				    "code", "unexpected argument '%s' (code goes after --)", p.arg);
			id = p.arg;
			break;
		}
	}
	if (!id)
		return cli_usage_error("code", "missing environment id");
	if (cwd && op != OPT_NEW)
		return cli_usage_error("code", "--cwd is for --new-context");
	if (op && (p.n_tail || context || timeout_ms || n_env || w.dir || (lang && op != OPT_NEW)))
		return cli_usage_error("code",
				       "--contexts, --new-context, --restart and --remove take no code");
	if (context && lang)
		return cli_usage_error("code", "--context and --lang go apart: a context has its language");
	if (w.dir && c->json)
		return cli_usage_error("code",
				       "--out writes images for the text output; --json has them as base64");
	/* --out DIR is made if it is not there (its parent must be), as `docker cp` makes its target. */
	if (w.dir && mkdir(w.dir, 0755) < 0 && errno != EEXIST)
		return cli_usage_error("code", "--out '%s': %s", w.dir, strerror(errno));
	if (w.dir && access(w.dir, W_OK) < 0)
		return cli_usage_error("code", "--out '%s': %s", w.dir, strerror(errno));
	int r = cli_open_ctx(c);
	if (r)
		return r;
	if (op)
		return context_command(c, id, op, op_arg, lang, cwd);

	_cleanup_free_ char *code = NULL;
	r = read_code(p.tail, p.n_tail, &code);
	if (r == -2)
		return cli_usage_error("code", "no code: give it after -- or on stdin");
	if (r == -3)
		return cli_usage_error("code", "the code on stdin is over %d bytes", CODE_STDIN_MAX);
	if (r < 0) {
		fprintf(stderr, "sbx: code: read the code: %s\n", strerror(errno));
		return EXIT_SBX;
	}
	sbx_code_opts x = SBX_CODE_OPTS_INIT;
	x.code = code;
	x.language = lang;
	x.context_id = context;
	x.env = n_env ? env : NULL;
	x.timeout_ms = timeout_ms;
	if (!c->json) {
		x.on_output = on_event;
		x.userdata = &w;
	}
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_run_code(c->ctx, id, &x, &j, &e) < 0) {
		fflush(stdout);
		return cli_fail("code", e);
	}
	fflush(stdout);
	int status = json_is_true(json_object_get(j, "timed_out")) ? EXIT_TIMEOUT
		     : json_object_get(j, "error")		   ? EXIT_RAISED
								   : 0;
	const char *ename = json_string_value(json_object_get(json_object_get(j, "error"), "name"));
	if (!c->json && ename && (streq(ename, "KernelDied") || streq(ename, "KernelRestarted")))
		fprintf(stderr, "sbx: code: %s: sbx code %s --restart %s\n",
			streq(ename, "KernelDied") ? "its state is gone; restart the context"
						   : "the context's state is gone",
			id, json_string_value(json_object_get(j, "context_id")) ?: "CONTEXT");
	if (c->json)
		cli_print_json(j);
	else
		json_decref(j);
	return status;
}
