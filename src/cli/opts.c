/* One way to parse a command's arguments: getopt_long over the command's
 * option table (cli.h: cli_opts). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "util/macro.h"

/* Exact long names only: getopt_long would take "--temp" for "--template",
 * which sbx has never accepted (a later option could make it ambiguous). */
static bool exact_long(const char *word, const char *name)
{
	size_t n = strlen(name);
	return startswith(word, "--") && strncmp(word + 2, name, n) == 0 &&
	       (word[2 + n] == 0 || word[2 + n] == '=');
}

int cli_opt_next(cli_opts *p, int argc, char **argv)
{
	if (!p->started) {
		snprintf(p->optstring, sizeof(p->optstring), "+:%s", p->shortopts ?: "");
		optind = 0; /* a full reset: sbx fork parses twice */
		opterr = 0;
		p->started = true;
		p->tail = argv + argc;
		p->n_tail = 0;
	}
	p->arg = NULL;
	if (p->dashdash) { /* after "--" every word is an argument */
		if (optind >= argc)
			return CLI_END;
		p->arg = argv[optind++];
		return CLI_ARG;
	}
	int last = optind ? optind : 1, longindex = -1;
	static const struct option none[] = {{0}};
	int o = getopt_long(argc, argv, p->optstring, p->longopts ?: none, &longindex);
	const char *word = last < argc ? argv[last] : "";
	if (o == -1) {
		bool dd = optind == last + 1 && streq(word, "--");
		if (!dd && optind >= argc)
			return CLI_END;
		if (p->tail_after >= 0 && (dd || p->n_pos >= p->tail_after)) {
			/* the command's argv starts here (sbx exec ID -- CMD) */
			p->tail = argv + optind;
			p->n_tail = argc - optind;
			return CLI_END;
		}
		if (dd) {
			p->dashdash = true;
			return cli_opt_next(p, argc, argv);
		}
		p->arg = argv[optind++];
		p->n_pos++;
		return CLI_ARG;
	}
	if (o == '?' || (longindex >= 0 && !exact_long(word, p->longopts[longindex].name))) {
		cli_usage_error(p->cmd, "unknown option '%s'", word);
		return CLI_ERR;
	}
	if (o == ':') {
		if (startswith(word, "--"))
			cli_usage_error(p->cmd, "%.*s needs a value", (int)strcspn(word, "="), word);
		else
			cli_usage_error(p->cmd, "-%c needs a value", optopt);
		return CLI_ERR;
	}
	p->arg = optarg;
	return o;
}

int cli_args(const char *cmd, int argc, char **argv, const char **pos, int cap, int *ret_n)
{
	cli_opts p = {.cmd = cmd, .tail_after = -1};
	int n = 0, o;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		if (o == CLI_ERR)
			return EXIT_SBX;
		if (n < cap)
			pos[n] = p.arg;
		n++;
	}
	*ret_n = n;
	return 0;
}
