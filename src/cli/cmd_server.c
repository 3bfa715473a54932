/* sbx mcp and sbx serve: the MCP server on stdio and over Streamable HTTP
 * (the protocol lives in src/server). */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "server/mcp.h"
#include "server/http_e2b.h"
#include "server/http_mcp.h"
#include "server/http_server.h"
#include "server/warm.h"
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
	for (size_t i = 0; i < n; i++)
		if (sbx_ctx_allow_host_dir(c->ctx, dirs[i], &e) < 0)
			return cli_fail("--allow-host-dir", e);
	return 0;
}

#define MAX_ALLOW_DIRS 64
static int add_allow_dir(const char *cmd, const char **allow, size_t *n, const char *dir)
{
	if (*n == MAX_ALLOW_DIRS)
		return cli_usage_error(cmd, "at most %d --allow-host-dir", MAX_ALLOW_DIRS);
	allow[(*n)++] = dir;
	return 0;
}

/* --warm N and --warm-memory SIZE (docs/warm.md "A server that keeps
 * itself warm"), shared by mcp and serve. */
static int parse_warm(const char *cmd, int o_warm, int o, const char *v, warm_opts *w)
{
	if (o == o_warm) {
		char *end = NULL;
		errno = 0;
		long n = v[0] >= '0' && v[0] <= '9' ? strtol(v, &end, 10) : -1;
		if (!end || *end || errno || n < 0 || n > 4096)
			return cli_usage_error(
			    cmd, "invalid --warm '%s': expected a whole number from 0 (off) to 4096", v);
		w->max_entries = (int)n;
		return 0;
	}
	sbx_err *e = NULL;
	if (sbx_parse_size(v, &w->memory_bytes, &e) < 0)
		return cli_fail("--warm-memory", e);
	return 0;
}

/* The server has stopped on a signal and restored the signals' default
 * actions; what is left is its warm set's cleanup (warm_stop: its pools
 * removed). A second stop signal meanwhile must not kill it half-way:
 * `timeout` sends SIGTERM twice (to the server, then to its process
 * group), and a user's second Ctrl-C comes soon. Ignored till exit. */
static void stop_signals_ignored(void)
{
	struct sigaction sa = {.sa_handler = SIG_IGN};
	sigemptyset(&sa.sa_mask);
	(void)sigaction(SIGINT, &sa, NULL);
	(void)sigaction(SIGTERM, &sa, NULL);
	(void)sigaction(SIGHUP, &sa, NULL);
}

static int start_warm(cli *c, const warm_opts *o, warm **ret)
{
	sbx_err *e = NULL;
	if (warm_start(c->ctx, o, ret, &e) < 0)
		return cli_fail("--warm", e);
	return 0;
}

int cmd_mcp(cli *c, int argc, char **argv)
{
	enum { O_ATTEST_KEY = 256, O_ALLOW_HOST_DIR, O_WARM, O_WARM_MEMORY };
	static const struct option longopts[] = {
	    {"attest-key", required_argument, NULL, O_ATTEST_KEY},
	    {"allow-host-dir", required_argument, NULL, O_ALLOW_HOST_DIR},
	    {"warm", required_argument, NULL, O_WARM},
	    {"warm-memory", required_argument, NULL, O_WARM_MEMORY},
	    {0},
	};
	warm_opts wo = {.max_entries = WARM_ENTRIES_DEFAULT, .memory_bytes = WARM_MEMORY_DEFAULT};
	cli_opts p = {.cmd = "mcp", .longopts = longopts, .tail_after = -1};
	const char *attest_key = NULL, *allow[MAX_ALLOW_DIRS];
	size_t n_allow = 0;
	int o;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		if (o == CLI_ERR)
			return EXIT_SBX;
		if (o == CLI_ARG)
			return cli_usage_error("mcp", "unexpected argument '%s'", p.arg);
		if (o == O_ATTEST_KEY)
			attest_key = p.arg;
		else if (o == O_WARM || o == O_WARM_MEMORY) {
			if (parse_warm("mcp", O_WARM, o, p.arg, &wo) != 0)
				return EXIT_SBX;
		} else if (add_allow_dir("mcp", allow, &n_allow, p.arg) != 0)
			return EXIT_SBX;
	}
	int r = cli_open_ctx(c);
	if (r != 0 || (r = set_attest_key(c, attest_key)) != 0 || (r = allow_dirs(c, allow, n_allow)) != 0)
		return r;
	warm *w = NULL;
	if ((r = start_warm(c, &wo, &w)) != 0)
		return r;
	sbx_err *e = NULL;
	r = mcp_serve_stdio(c->ctx, STDIN_FILENO, STDOUT_FILENO, &e);
	stop_signals_ignored();
	warm_stop(w);
	if (r < 0)
		return cli_fail("mcp", e);
	return 0;
}

typedef struct serve_ready {
	bool has_token;
} serve_ready;

static void on_ready(const char *url, bool loopback, void *userdata)
{
	serve_ready *sr = userdata;
	fprintf(stderr, "sbx: serving MCP on %s" HTTP_MCP_PATH "%s\n", url,
		sr->has_token ? " (bearer token required)" : "");
	fprintf(stderr, "sbx: serving the E2B API on %s%s\n", url,
		sr->has_token ? " (E2B_API_KEY: the token)"
		: loopback    ? " (no --token-file: any E2B_API_KEY, e.g. e2b_0)"
			      : " (refused: no --token-file off loopback)");
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
		return cli_usage_error("serve", "invalid %s '%s': expected a whole number from 1 to %u", name,
				       v, max);
	*ret = (unsigned)n;
	return 0;
}

int cmd_serve(cli *c, int argc, char **argv)
{
	enum {
		O_LISTEN = 256,
		O_TOKEN_FILE,
		O_MAX_CONN,
		O_MAX_CONN_PEER,
		O_IDLE_TIMEOUT,
		O_REQUEST_TIMEOUT,
		O_MAX_SESSIONS,
		O_MAX_SESSIONS_PEER,
		O_SESSION_MIN_IDLE,
		O_ATTEST_KEY,
		O_ALLOW_HOST_DIR,
		O_INSECURE_NO_TOKEN,
		O_WARM,
		O_WARM_MEMORY,
		O_DOMAIN,
		O_POLICY
	};
	static const struct option longopts[] = {
	    {"listen", required_argument, NULL, O_LISTEN},
	    {"token-file", required_argument, NULL, O_TOKEN_FILE},
	    {"max-connections", required_argument, NULL, O_MAX_CONN},
	    {"max-connections-per-peer", required_argument, NULL, O_MAX_CONN_PEER},
	    {"idle-timeout", required_argument, NULL, O_IDLE_TIMEOUT},
	    {"request-timeout", required_argument, NULL, O_REQUEST_TIMEOUT},
	    {"max-sessions", required_argument, NULL, O_MAX_SESSIONS},
	    {"max-sessions-per-peer", required_argument, NULL, O_MAX_SESSIONS_PEER},
	    {"session-min-idle", required_argument, NULL, O_SESSION_MIN_IDLE},
	    {"attest-key", required_argument, NULL, O_ATTEST_KEY},
	    {"allow-host-dir", required_argument, NULL, O_ALLOW_HOST_DIR},
	    {"insecure-no-token", no_argument, NULL, O_INSECURE_NO_TOKEN},
	    {"warm", required_argument, NULL, O_WARM},
	    {"warm-memory", required_argument, NULL, O_WARM_MEMORY},
	    {"domain", required_argument, NULL, O_DOMAIN},
	    {"policy", required_argument, NULL, O_POLICY},
	    {0},
	};
	cli_opts p = {.cmd = "serve", .longopts = longopts, .tail_after = -1};
	const char *listen = NULL, *token_file = NULL, *attest_key = NULL, *domain = NULL, *policy = NULL,
		   *allow[MAX_ALLOW_DIRS];
	size_t n_allow = 0;
	bool insecure_no_token = false;
	http_server_opts opts = {0};
	http_mcp_opts mcp = {0};
	warm_opts wo = {.max_entries = WARM_ENTRIES_DEFAULT, .memory_bytes = WARM_MEMORY_DEFAULT};
	int o;
	while ((o = cli_opt_next(&p, argc, argv)) != CLI_END) {
		const char *v = p.arg;
		int r = 0;
		switch (o) {
		case CLI_ERR:
			return EXIT_SBX;
		case CLI_ARG:
			return cli_usage_error("serve", "unexpected argument '%s'", v);
		case O_LISTEN:
			listen = v;
			break;
		case O_TOKEN_FILE:
			token_file = v;
			break;
		case O_DOMAIN:
			domain = v;
			break;
		case O_POLICY:
			policy = v;
			break;
		case O_INSECURE_NO_TOKEN:
			insecure_no_token = true;
			break;
		case O_ATTEST_KEY:
			attest_key = v;
			break;
		case O_ALLOW_HOST_DIR:
			r = add_allow_dir("serve", allow, &n_allow, v);
			break;
		case O_MAX_CONN:
			r = parse_count("--max-connections", v, 65536, &opts.max_connections);
			break;
		case O_MAX_CONN_PEER:
			r = parse_count("--max-connections-per-peer", v, 65536,
					&opts.max_connections_per_peer);
			break;
		case O_IDLE_TIMEOUT:
			r = parse_count("--idle-timeout", v, 86400, &opts.idle_timeout_s);
			break;
		case O_REQUEST_TIMEOUT:
			r = parse_count("--request-timeout", v, 86400, &opts.request_timeout_s);
			break;
		case O_MAX_SESSIONS:
			r = parse_count("--max-sessions", v, 65536, &mcp.max_sessions);
			break;
		case O_MAX_SESSIONS_PEER:
			r = parse_count("--max-sessions-per-peer", v, 65536, &mcp.max_sessions_per_peer);
			break;
		case O_WARM:
		case O_WARM_MEMORY:
			r = parse_warm("serve", O_WARM, o, v, &wo);
			break;
		case O_SESSION_MIN_IDLE: /* at most the session TTL, an hour */
			r = parse_count("--session-min-idle", v, 3600, &mcp.session_min_idle_s);
			break;
		}
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
	/* A server that runs code for whoever reaches it does not start open by accident. */
	opts.loopback_only = !token_file && !insecure_no_token;
	opts.on_ready = on_ready;
	opts.userdata = &sr;
	mcp.token_file = token_file;
	/* One port, a family of routes per API (src/server/http_server.h). */
	http_server *hs = NULL;
	sbx_err *e = NULL;
	http_e2b_opts e2b = {.token_file = token_file, .domain = domain, .policy = policy};
	/* E2B's data plane first: its predicate (an E2b-Sandbox-Id header) takes
	 * any path. */
	warm *w = NULL;
	if ((r = start_warm(c, &wo, &w)) != 0)
		return r;
	if (http_server_new(&opts, &hs, &e) < 0 || http_e2b_add(hs, c->ctx, &e2b, &e) < 0 ||
	    http_mcp_add(hs, c->ctx, &mcp, &e) < 0 || http_server_run(hs, &e) < 0) {
		stop_signals_ignored();
		http_server_free(hs);
		warm_stop(w);
		return cli_fail("serve", e);
	}
	stop_signals_ignored();
	http_server_free(hs);
	warm_stop(w);
	return 0;
}
