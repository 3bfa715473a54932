/* sbx mcp and sbx serve: the MCP server on stdio and over Streamable HTTP
 * (the protocol lives in src/server). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "server/mcp.h"
#include "server/transport_http.h"
#include "util/macro.h"

/* --attest-key FILE: the private key environment_attest signs with, loaded
 * (and checked) now so that a bad key fails at start, not at the first call. */
static int set_attest_key(cli *c, const char *path)
{
	sbx_err *e = NULL;
	if (path && sbx_ctx_set_attest_key(c->ctx, path, &e) < 0)
		return cli_fail("--attest-key", e);
	return 0;
}

/* --allow-host-dir DIR: a host directory clients may name (template_build's context). */
static int allow_dirs(cli *c, const char *const *dirs, size_t n)
{
	sbx_err *e = NULL;
	for (size_t i = 0; i < n && i < 64; i++)
		if (sbx_ctx_allow_host_dir(c->ctx, dirs[i], &e) < 0)
			return cli_fail("--allow-host-dir", e);
	return 0;
}

int cmd_mcp(cli *c, int argc, char **argv)
{
	const char *attest_key = NULL, *allow[64];
	size_t n_allow = 0;
	for (int i = 1; i < argc; i++) {
		if (streq(argv[i], "--attest-key") && i + 1 < argc)
			attest_key = argv[++i];
		else if (startswith(argv[i], "--attest-key="))
			attest_key = argv[i] + strlen("--attest-key=");
		else if (streq(argv[i], "--allow-host-dir") && i + 1 < argc)
			allow[n_allow++ % 64] = argv[++i];
		else
			return cli_usage_error("mcp", "unexpected argument '%s'", argv[i]);
	}
	int r = cli_open_ctx(c);
	if (r != 0 || (r = set_attest_key(c, attest_key)) != 0 || (r = allow_dirs(c, allow, n_allow)) != 0)
		return r;
	sbx_err *e = NULL;
	if (mcp_serve_stdio(c->ctx, STDIN_FILENO, STDOUT_FILENO, &e) < 0)
		return cli_fail("mcp", e);
	return 0;
}

typedef struct serve_ready {
	bool has_token;
} serve_ready;

static void on_ready(const char *url, bool loopback, void *userdata)
{
	serve_ready *sr = userdata;
	fprintf(stderr, "sbx: serving MCP on %s%s\n", url, sr->has_token ? " (bearer token required)" : "");
	if (!loopback && !sr->has_token)
		fprintf(stderr,
			"sbx: warning: listening beyond loopback without --token-file: anyone who can "
			"reach this port can run commands\n");
	fflush(stderr);
}

/* A whole number from 1 to max for flag `name`. */
static int parse_count(const char *name, const char *v, unsigned max, unsigned *ret)
{
	char *end = NULL;
	errno = 0;
	unsigned long n = v[0] >= '0' && v[0] <= '9' ? strtoul(v, &end, 10) : 0;
	if (!end || *end || errno || n < 1 || n > max)
		return cli_usage_error("serve", "invalid %s '%s': expected a whole number from 1 to %u", name, v,
				       max);
	*ret = (unsigned)n;
	return 0;
}

int cmd_serve(cli *c, int argc, char **argv)
{
	static const char *const names[] = {"--listen",		      "--token-file",	 "--max-connections",
					    "--max-connections-per-peer", "--idle-timeout", "--request-timeout", "--attest-key",
					    "--allow-host-dir"};
	const char *allow[64];
	size_t n_allow = 0;
	const char *listen = NULL, *token_file = NULL, *attest_key = NULL;
	mcp_http_opts opts = {0};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL, *name = NULL;
		for (size_t k = 0; k < ARRAY_SIZE(names) && !name; k++) {
			size_t n = strlen(names[k]);
			if (strncmp(a, names[k], n) == 0 && (a[n] == 0 || a[n] == '='))
				name = names[k];
		}
		if (!name)
			return cli_usage_error("serve", "unexpected argument '%s'", a);
		size_t n = strlen(name);
		if (a[n] == '=')
			v = a + n + 1;
		else if (i + 1 < argc)
			v = argv[++i];
		else
			return cli_usage_error("serve", "%s needs a value", name);
		int r = 0;
		if (streq(name, "--listen"))
			listen = v;
		else if (streq(name, "--attest-key"))
			attest_key = v;
		else if (streq(name, "--allow-host-dir"))
			allow[n_allow++ % 64] = v;
		else if (streq(name, "--token-file"))
			token_file = v;
		else if (streq(name, "--max-connections"))
			r = parse_count(name, v, 65536, &opts.max_connections);
		else if (streq(name, "--max-connections-per-peer"))
			r = parse_count(name, v, 65536, &opts.max_connections_per_peer);
		else if (streq(name, "--idle-timeout"))
			r = parse_count(name, v, 86400, &opts.idle_timeout_s);
		else
			r = parse_count(name, v, 86400, &opts.request_timeout_s);
		if (r != 0)
			return r;
	}
	if (!listen)
		return cli_usage_error("serve",
				       "--listen ADDR:PORT is required (e.g. --listen 127.0.0.1:7777)");
	int r = cli_open_ctx(c);
	if (r != 0 || (r = set_attest_key(c, attest_key)) != 0 || (r = allow_dirs(c, allow, n_allow)) != 0)
		return r;
	serve_ready sr = {.has_token = token_file != NULL};
	opts.listen = listen;
	opts.token_file = token_file;
	opts.on_ready = on_ready;
	opts.userdata = &sr;
	sbx_err *e = NULL;
	if (mcp_serve_http(c->ctx, &opts, &e) < 0)
		return cli_fail("serve", e);
	return 0;
}
