/* sbx build: a template from a Dockerfile (docs/build.md). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/fs.h"
#include "util/macro.h"

#define MAX_LIST 256

typedef struct show_state {
	bool tty, json;
} show_state;

static void on_step(void *userdata, const json_t *step)
{
	show_state *s = userdata;
	if (s->json)
		return;
	const char *state = json_string_value(json_object_get(step, "state"));
	int n = (int)json_integer_value(json_object_get(step, "step")),
	    total = (int)json_integer_value(json_object_get(step, "steps"));
	const char *text = json_string_value(json_object_get(step, "instruction"));
	if (streq(state, "running")) {
		fprintf(stderr, "%s[%2d/%d] %s%s\n", s->tty ? "\033[1m" : "", n, total, text,
			s->tty ? "\033[0m" : "");
		return;
	}
	bool cached = json_is_true(json_object_get(step, "cached")),
	     files = json_is_true(json_object_get(step, "changes_files"));
	const char *snap = json_string_value(json_object_get(step, "snapshot_id"));
	if (files)
		fprintf(stderr, "        %s %.19s  %lld ms\n", cached ? "CACHED" : "done  ", snap ? snap : "",
			(long long)json_integer_value(json_object_get(step, "duration_ms")));
}

/* RUN's output: to stderr, so that stdout stays the result (--json). */
static void on_output(void *userdata, int stream, const char *buf, size_t len)
{
	fwrite(buf, 1, len, stderr);
}

int cmd_build(cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"file", required_argument, NULL, 'f'},
	    {"tag", required_argument, NULL, 't'},
	    {"network", required_argument, NULL, 'n'},
	    {"build-arg", required_argument, NULL, 'a'},
	    {"secret", required_argument, NULL, 's'},
	    {"no-cache", no_argument, NULL, 'N'},
	    {NULL, 0, NULL, 0},
	};
	const char *file = NULL, *tag = NULL, *network = NULL;
	const char *bargs[MAX_LIST + 1] = {0}, *secrets[MAX_LIST + 1] = {0};
	size_t nb = 0, ns = 0;
	bool no_cache = false;
	_cleanup_strv_free_ char **owned = calloc(MAX_LIST + 1, sizeof(char *));
	size_t no = 0;
	if (!owned)
		return cli_usage_error("build", "out of memory");
	optind = 0;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, "+f:t:", longopts, NULL)) != -1) {
		switch (ch) {
		case 'f':
			file = optarg;
			break;
		case 't':
			tag = optarg;
			break;
		case 'n':
			network = optarg;
			break;
		case 'a':
			if (nb >= MAX_LIST)
				return cli_usage_error("build", "too many --build-arg");
			bargs[nb++] = optarg;
			break;
		case 's': {
			if (ns >= MAX_LIST)
				return cli_usage_error("build", "too many --secret");
			/* docker's id=NAME,src=FILE as well as sbx's NAME[=FILE]. */
			if (startswith(optarg, "id=")) {
				const char *id = optarg + 3, *src = strstr(optarg, ",src=");
				if (!src)
					src = strstr(optarg, ",source=");
				char *s = NULL;
				if (src && asprintf(&s, "%.*s=%s", (int)(strchr(id, ',') - id), id,
						    strchr(src + 1, '=') + 1) < 0)
					s = NULL;
				if (!src)
					s = strdup(id);
				if (!s)
					return cli_usage_error("build", "out of memory");
				owned[no++] = s;
				secrets[ns++] = s;
			} else {
				secrets[ns++] = optarg;
			}
			break;
		}
		case 'N':
			no_cache = true;
			break;
		default:
			return cli_usage_error("build", "unknown option '%s'", argv[optind - 1]);
		}
	}
	if (!tag)
		return cli_usage_error("build", "missing -t NAME (the template to build)");
	if (argc - optind != 1)
		return cli_usage_error("build", "expected one CONTEXT directory");
	const char *context = argv[optind];
	_cleanup_free_ char *dpath = file ? strdup(file) : fs_path_join(context, "Dockerfile"), *text = NULL;
	size_t len = 0;
	if (!dpath)
		return cli_usage_error("build", "out of memory");
	if (streq(dpath, "-")) {
		/* The Dockerfile on stdin. */
		size_t cap = 0;
		FILE *f = stdin;
		for (;;) {
			if (len + 4096 > cap) {
				char *nt = realloc(text, cap = cap ? cap * 2 : 8192);
				if (!nt)
					return cli_usage_error("build", "out of memory");
				text = nt;
			}
			size_t r = fread(text + len, 1, cap - len, f);
			len += r;
			if (!r)
				break;
		}
	} else if (fs_read_file(dpath, 16u << 20, &text, &len) < 0) {
		fprintf(stderr, "sbx: build: read '%s': %m\n", dpath);
		return EXIT_SBX;
	}
	int r = cli_open_ctx(c);
	if (r)
		return r;
	show_state ss = {.tty = isatty(2), .json = c->json};
	const char *slash = strrchr(dpath, '/');
	sbx_build_opts o = SBX_BUILD_OPTS_INIT;
	o.dockerfile = text ? text : "";
	o.dockerfile_len = len;
	o.dockerfile_name = streq(dpath, "-") ? "Dockerfile" : slash ? slash + 1 : dpath;
	o.context = context;
	o.tag = tag;
	o.network = network;
	o.build_args = nb ? bargs : NULL;
	o.secrets = ns ? secrets : NULL;
	o.no_cache = no_cache;
	o.on_step = on_step;
	o.on_output = on_output;
	o.userdata = &ss;
	json_t *res = NULL;
	sbx_err *e = NULL;
	if (sbx_build(c->ctx, &o, &res, &e) < 0)
		return cli_fail("build", e);
	if (c->json) {
		cli_print_json(res);
		return 0;
	}
	printf("%s %s\n", json_string_value(json_object_get(res, "template")),
	       json_string_value(json_object_get(res, "snapshot_id")));
	fprintf(stderr, "built template '%s' in %lld ms (%lld cached, %lld run)\n",
		json_string_value(json_object_get(res, "template")),
		(long long)json_integer_value(json_object_get(res, "build_ms")),
		(long long)json_integer_value(json_object_get(res, "cache_hits")),
		(long long)json_integer_value(json_object_get(res, "cache_misses")));
	json_decref(res);
	return 0;
}
