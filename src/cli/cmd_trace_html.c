/* sbx trace html TRACE [-o FILE] [--replay[=RESULT.json]]: the trace as one
 * self-contained page (src/trace/trace_html.h). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "util/fs.h"
#include "util/json.h"
#include "util/macro.h"

int cmd_trace_html(cli *c, int argc, char **argv)
{
	static const struct option longopts[] = {
	    {"output", required_argument, NULL, 'o'},
	    {"replay", optional_argument, NULL, 'r'},
	    {NULL, 0, NULL, 0},
	};
	const char *outfile = NULL, *result_file = NULL;
	bool replay = false;
	optind = 0;
	opterr = 0;
	int ch;
	while ((ch = getopt_long(argc, argv, "o:", longopts, NULL)) != -1) {
		if (ch == 'o')
			outfile = optarg;
		else if (ch == 'r') {
			replay = true;
			result_file = optarg;
		} else
			return cli_usage_error("trace", "html: unknown option '%s'", argv[optind - 1]);
	}
	if (argc - optind != 1)
		return cli_usage_error("trace",
				       "expected: sbx trace html TRACE [-o FILE] [--replay[=RESULT.json]]");
	const char *ref = argv[optind];
	int r = cli_open_ctx(c);
	if (r)
		return r;
	sbx_err *e = NULL;
	_cleanup_json_ json_t *res = NULL;
	if (result_file) {
		json_error_t je;
		if (!(res = json_load_file(result_file, 0, &je))) {
			fprintf(stderr, "sbx: trace html: replay result '%s': %s\n", result_file, je.text);
			return EXIT_SBX;
		}
	} else if (replay && sbx_trace_replay(c->ctx, ref, &res, &e) < 0) {
		return cli_fail("trace html: replay", e);
	}
	FILE *out = stdout;
	_cleanup_free_ char *tmp = NULL;
	if (outfile && !streq(outfile, "-")) {
		if (asprintf(&tmp, "%s.tmp", outfile) < 0 || !(out = fopen(tmp, "we"))) {
			fprintf(stderr, "sbx: trace html: open '%s': %m\n", outfile);
			return EXIT_SBX;
		}
	}
	r = sbx_trace_html(c->ctx, ref, res, out, &e);
	if (out != stdout) {
		if (fclose(out) != 0 && r == 0) {
			fprintf(stderr, "sbx: trace html: write '%s': %m\n", outfile);
			return EXIT_SBX;
		}
		if (r == 0 && rename(tmp, outfile) < 0) {
			fprintf(stderr, "sbx: trace html: rename to '%s': %m\n", outfile);
			return EXIT_SBX;
		}
		if (r < 0)
			unlink(tmp);
	}
	if (r < 0)
		return cli_fail("trace html", e);
	if (outfile && !streq(outfile, "-") && !c->json)
		fprintf(stderr, "wrote %s\n", outfile);
	if (c->json)
		cli_print_json(json_pack("{s:s,s:s?,s:s?}", "trace_id", ref, "output", outfile, "verdict",
					 res ? json_string_value(json_object_get(res, "verdict")) : NULL));
	return 0;
}
