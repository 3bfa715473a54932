/* sbx keygen, sbx attest, sbx verify (docs/attest.md). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/macro.h"

#define ENVELOPE_READ_MAX ((16u << 20) + 1) /* one byte over the library's limit: it says "too large" */

/* "--name VALUE" or "--name=VALUE" at argv[*i]; NULL (and *bad) if the value is missing. */
static const char *opt_value(const char *cmd, const char *name, int argc, char **argv, int *i, int *bad)
{
	const char *a = argv[*i];
	size_t n = strlen(name);
	if (a[n] == '=')
		return a + n + 1;
	if (*i + 1 < argc)
		return argv[++*i];
	*bad = cli_usage_error(cmd, "%s needs a value", name);
	return NULL;
}

static bool is_opt(const char *a, const char *name)
{
	size_t n = strlen(name);
	return strncmp(a, name, n) == 0 && (a[n] == 0 || a[n] == '=');
}

int cmd_keygen(cli *c, int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-')
			return cli_usage_error("keygen", "unknown option '%s'", argv[i]);
	if (argc != 2)
		return cli_usage_error("keygen", "expected: sbx keygen FILE");
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_keygen(argv[1], &j, &e) < 0)
		return cli_fail("keygen", e);
	if (c->json) {
		cli_print_json(j);
		return 0;
	}
	printf("%s\n", json_string_value(json_object_get(j, "keyid")));
	fprintf(stderr, "sbx: wrote %s (private, 0600) and %s\n", argv[1],
		json_string_value(json_object_get(j, "public_key")));
	json_decref(j);
	return 0;
}

static int write_out(const char *path, const char *s)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		fprintf(stderr, "sbx: attest: create '%s': %s\n", path, strerror(errno));
		return EXIT_SBX;
	}
	size_t len = strlen(s), off = 0;
	while (off < len) {
		ssize_t n = write(fd, s + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			fprintf(stderr, "sbx: attest: write '%s': %s\n", path, strerror(errno));
			close(fd);
			return EXIT_SBX;
		}
		off += (size_t)n;
	}
	if (close(fd) < 0) {
		fprintf(stderr, "sbx: attest: write '%s': %s\n", path, strerror(errno));
		return EXIT_SBX;
	}
	return 0;
}

int cmd_attest(cli *c, int argc, char **argv)
{
	const char *trace = NULL, *out = NULL;
	sbx_attest_opts o = SBX_ATTEST_OPTS_INIT;
	int bad = 0;
	for (int i = 1; i < argc && !bad; i++) {
		const char *a = argv[i];
		if (is_opt(a, "--key"))
			o.key_path = opt_value("attest", "--key", argc, argv, &i, &bad);
		else if (is_opt(a, "-o") || is_opt(a, "--output"))
			out = opt_value("attest", a[1] == 'o' ? "-o" : "--output", argc, argv, &i, &bad);
		else if (streq(a, "--replay"))
			o.replay = true;
		else if (a[0] == '-')
			return cli_usage_error("attest", "unknown option '%s'", a);
		else if (trace)
			return cli_usage_error("attest", "unexpected argument '%s'", a);
		else
			trace = a;
	}
	if (bad)
		return bad;
	if (!trace || !o.key_path)
		return cli_usage_error("attest", "expected: sbx attest TRACE --key FILE [-o OUT] [--replay]");
	int r = cli_open_ctx(c);
	if (r)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	if (sbx_attest(c->ctx, trace, &o, &j, &e) < 0)
		return cli_fail("attest", e);
	char *env = json_dumps(json_object_get(j, "envelope"), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (!env) {
		json_decref(j);
		fprintf(stderr, "sbx: attest: out of memory\n");
		return EXIT_SBX;
	}
	r = 0;
	if (out) {
		size_t n = strlen(env);
		char *line = malloc(n + 2);
		if (line) {
			memcpy(line, env, n);
			memcpy(line + n, "\n", 2);
			r = write_out(out, line);
			free(line);
		} else
			r = EXIT_SBX;
	}
	if (c->json)
		cli_print_json(j);
	else {
		if (!out)
			puts(env);
		json_decref(j);
	}
	free(env);
	return r;
}

static int read_envelope(const char *path, char **ret, size_t *ret_len)
{
	FILE *f = streq(path, "-") ? stdin : fopen(path, "re");
	if (!f) {
		fprintf(stderr, "sbx: verify: open '%s': %s\n", path, strerror(errno));
		return EXIT_SBX;
	}
	char *buf = malloc(ENVELOPE_READ_MAX);
	size_t n = buf ? fread(buf, 1, ENVELOPE_READ_MAX, f) : 0;
	bool failed = !buf || ferror(f);
	if (f != stdin)
		fclose(f);
	if (failed) {
		free(buf);
		fprintf(stderr, "sbx: verify: read '%s': %s\n", path, buf ? "read error" : "out of memory");
		return EXIT_SBX;
	}
	*ret = buf;
	*ret_len = n;
	return 0;
}

int cmd_verify(cli *c, int argc, char **argv)
{
	const char *path = NULL;
	sbx_verify_opts o = SBX_VERIFY_OPTS_INIT;
	int bad = 0;
	for (int i = 1; i < argc && !bad; i++) {
		const char *a = argv[i];
		if (is_opt(a, "--key"))
			o.key_path = opt_value("verify", "--key", argc, argv, &i, &bad);
		else if (streq(a, "--replay"))
			o.replay = true;
		else if (a[0] == '-' && a[1])
			return cli_usage_error("verify", "unknown option '%s'", a);
		else if (path)
			return cli_usage_error("verify", "unexpected argument '%s'", a);
		else
			path = a;
	}
	if (bad)
		return bad;
	if (!path || !o.key_path)
		return cli_usage_error("verify", "expected: sbx verify ENVELOPE --key FILE.pub [--replay]");
	int r = cli_open_ctx(c);
	if (r)
		return r;
	char *buf = NULL;
	size_t len = 0;
	if ((r = read_envelope(path, &buf, &len)) != 0)
		return r;
	json_t *j = NULL;
	sbx_err *e = NULL;
	r = sbx_verify(c->ctx, buf, len, &o, &j, &e);
	free(buf);
	if (r < 0)
		return cli_fail("verify", e);
	bool ok = json_is_true(json_object_get(j, "verified"));
	if (c->json) {
		cli_print_json(j);
		return ok ? 0 : 1;
	}
	if (ok)
		printf("OK: signed by %s; trace %s; %zu subjects match the store%s\n",
		       json_string_value(json_object_get(j, "keyid")),
		       json_string_value(json_object_get(j, "trace_id")),
		       json_array_size(json_object_get(j, "subjects")), o.replay ? "; replay MATCH" : "");
	else
		fprintf(stderr, "sbx: verify: %s\n",
			json_string_value(json_object_get(j, "reason")) ?: "failed");
	json_decref(j);
	return ok ? 0 : 1;
}
