/* sbx: entry point and subcommand table. */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "util/macro.h"

static const cli_cmd commands[] = {
    {"run", cmd_run, "sbx run [CREATE-OPTS] [EXEC-OPTS] [-- CMD [ARG...]]",
     "Create an environment, run one command in it, destroy it. Exits with the command's status. With "
     "an image template (--template NAME): its ENTRYPOINT before CMD, and with no CMD given its own CMD, "
     "as docker run does. SIGINT, SIGTERM, SIGHUP and SIGQUIT go to the command; killed in any way, sbx "
     "run leaves nothing behind (its supervisor removes the environment)."},
    {"create", cmd_create, "sbx create [CREATE-OPTS]", "Create a live environment and print its id."},
    {"exec", cmd_exec, "sbx exec [EXEC-OPTS] [-d] ID -- CMD [ARG...]",
     "Run a command in a live environment, streaming stdio. Exits with its status (128+N on signal N); "
     "SIGINT, SIGTERM, SIGHUP and SIGQUIT go to the command. -d: in the background, printing its process id "
     "(sbx ps ID, sbx kill ID PROC)."},
    {"ls", cmd_ls, "sbx ls", "List environments."},
    {"inspect", cmd_inspect, "sbx inspect ID",
     "Show an environment: limits, isolation walls in force and missing, usage."},
    {"ps", cmd_ps, "sbx ps ID | sbx ps ID PROC [--output] [--wait DURATION]",
     "List the processes inside an environment (pids as seen inside) and its background processes "
     "(exec -d); with PROC, one background process: its record, --output what it printed (stdout, "
     "stderr), --wait until it exits (at most DURATION; exit status 0 once exited, 1 still running)."},
    {"kill", cmd_kill, "sbx kill ID PROC [SIGNAL]",
     "Send a signal (default TERM; a name such as KILL or INT, or a number) to a background process "
     "(exec -d) and its process group."},
    {"phase", cmd_phase, "sbx phase ID [agent]",
     "Show an environment's phase, or switch it for good from setup to agent: its processes end, its "
     "secrets are removed, the agent policy's network and limits apply."},
    {"logs", cmd_logs, "sbx logs ID --net",
     "Show the egress proxy's log of an environment with network allow: each connection, allowed or "
     "refused."},
    {"cp", cmd_cp, "sbx cp SRC DST",
     "Copy a file or a directory tree between the host and an environment (ID:PATH on one side). Into an "
     "existing directory under the source's name, else as the new name. Ownership becomes the receiving "
     "side's user; setuid bits and devices are dropped."},
    {"rm", cmd_rm, "sbx rm ID...", "Stop and remove environments: processes, cgroups and files."},
    {"pause", cmd_pause, "sbx pause ID",
     "Freeze every process of an environment (memory kept, timeouts stopped); an exec resumes it."},
    {"pool", cmd_pool,
     "sbx pool set TEMPLATE|SNAPSHOT --size N [--policy P] | sbx pool ls | sbx pool rm TEMPLATE|SNAPSHOT "
     "[--policy P]",
     "Keep N environments of a template or snapshot built ahead; a create or run with the same template "
     "(or snapshot) and policy and no other option takes one (from_pool). Refilled in the background. "
     "SBX_POOL_LAYER=tmpfs at set (root): the entries' writable layer is a tmpfs (memory; docs/warm.md)."},
    {"resume", cmd_resume, "sbx resume ID",
     "Thaw a paused environment, or start a suspended or stopped one again on its files (same id; its "
     "processes are gone)."},
    {"snapshot", cmd_snapshot, "sbx snapshot ID [--label L]",
     "Capture an environment (frozen meanwhile) as a content-addressed snapshot; prints sha256:<hex>."},
    {"restore", cmd_restore, "sbx restore ID SNAPSHOT",
     "Roll an environment back in place to a snapshot (digest, prefix or label); its processes end."},
    {"fork", cmd_fork, "sbx fork SNAPSHOT [CREATE-OPTS]",
     "Create a new environment from a snapshot (as create --snapshot)."},
    {"snapshots", cmd_snapshots, "sbx snapshots", "List snapshots with label, parent, time and size."},
    {"diff", cmd_diff, "sbx diff ID [SNAPSHOT]",
     "Show what changed in an environment since its base or a snapshot: A/M/D lines, sorted by path."},
    {"export", cmd_export, "sbx export SNAPSHOT oci:DIR[:TAG]",
     "Write a snapshot as an OCI image (gzip layers) into an OCI image layout."},
    {"import", cmd_import, "sbx import oci:DIR[:TAG] [--name N]",
     "Import an OCI image layout as a template (default name: the tag or DIR's name)."},
    {"push", cmd_push, "sbx push SNAPSHOT REGISTRY/REPO:TAG [--insecure]",
     "Push a snapshot to an OCI registry as sbx export writes it (blobs the registry has are not sent); "
     "credentials from ~/.docker/config.json or $REGISTRY_AUTH_FILE; --insecure: plain HTTP."},
    {"pull", cmd_pull, "sbx pull REGISTRY/REPO:TAG [--name N] [--insecure]",
     "Pull a snapshot (or any image) from an OCI registry, every digest verified; labels it N (default: the "
     "repository's last component) and prints its digest."},
    {"template", cmd_template, "sbx template add NAME oci:DIR[:TAG]|dir:PATH|host|SNAPSHOT | sbx template ls",
     "Name a template for create --template NAME; list templates."},
    {"build", cmd_build,
     "sbx build [-f Dockerfile] -t NAME [--network MODE] [--build-arg K=V] [--secret NAME[=FILE]] "
     "[--no-cache] CONTEXT",
     "Build a template from a Dockerfile (FROM a template, snapshot, oci:DIR[:TAG] or scratch; RUN, COPY, "
     "ADD, "
     "ENV, ARG, WORKDIR, USER, LABEL, SHELL, CMD, ENTRYPOINT, EXPOSE). Each step is a cached snapshot; RUN "
     "has "
     "no network unless --network allows it; secrets are never stored. See docs/build.md."},
    {"policy", cmd_policy, "sbx policy ls | show NAME|FILE | check FILE",
     "List the built-in policies (strict, dev, open), show one, or validate a policy file."},
    {"trace", cmd_trace,
     "sbx trace ls | show TRACE [--pid P] [--syscall NAME,...] | stats TRACE | export TRACE --format chrome "
     "[-o FILE] | html TRACE [-o FILE] [--replay[=RESULT.json]] | inspect TRACE",
     "List recorded traces, print one strace-like, summarize it, export it for Perfetto, draw it as one "
     "self-contained HTML page (with a replay's divergence highlighted), or show its manifest."},
    {"replay", cmd_replay, "sbx replay [--inputs read-set|volumes] TRACE",
     "Re-run a traced command from its snapshot under determinism controls; prints MATCH or the first "
     "divergence (exit 0 only on MATCH). Inputs checked first: the files the run read (default) or whole "
     "volumes."},
    {"keygen", cmd_keygen, "sbx keygen FILE",
     "Make an Ed25519 key pair for attestations: FILE (private, 0600) and FILE.pub (PEM); prints its key "
     "id."},
    {"attest", cmd_attest, "sbx attest TRACE --key FILE [-o OUT] [--replay]",
     "Sign a DSSE envelope (in-toto Statement v1) of a traced run: its stdout, stderr and written files by "
     "sha256, its snapshot, command and exit status (--replay: replay first, record the verdict)."},
    {"verify", cmd_verify, "sbx verify ENVELOPE --key FILE.pub [--replay]",
     "Check an attestation: the signature, every digest against the store (--replay: and a MATCHing replay); "
     "exit 0 only if all hold."},
    {"gc", cmd_gc, "sbx gc", "Remove what no live environment reaches (after a crash or kill -9)."},
    {"fsck", cmd_fsck, "sbx fsck",
     "Verify every digest and reference in the store; exit 1 if something is corrupt."},
    {"mcp", cmd_mcp, "sbx mcp [--attest-key FILE] [--allow-host-dir DIR]",
     "Serve MCP (Model Context Protocol) on stdin/stdout for an AI agent (--attest-key: the private key "
     "environment_attest signs with; --allow-host-dir: a host directory clients may name, e.g. as "
     "template_build's context)."},
    {"serve", cmd_serve,
     "sbx serve --listen ADDR:PORT [--token-file F] [--max-connections N] [--max-connections-per-peer N] "
     "[--idle-timeout SECONDS] [--request-timeout SECONDS] [--max-sessions N] [--max-sessions-per-peer N] "
     "[--session-min-idle SECONDS] [--attest-key FILE] [--allow-host-dir DIR]",
     "Serve MCP over Streamable HTTP at POST /mcp (and the JSON-RPC methods); a bearer token from F when "
     "given; --attest-key as for mcp. Connections: at most N in total (256) and per peer address (64), a new "
     "one evicting the oldest that only waits (never-authorized first); a request must arrive whole within "
     "--request-timeout (30 s; slow headers or bodies are cut), an authorized keep-alive connection may idle "
     "--idle-timeout (60 s). Sessions: at most N in total (1024) and per peer (a quarter); an initialize "
     "displaces a half-open session (initialized, nothing sent since) first, else one idle for "
     "--session-min-idle (60 s), never one running a call, else gets 503 with Retry-After. See "
     "docs/server.md."},
};

static const char create_opts_help[] =
    "CREATE-OPTS:\n"
    "  --template T        host (default: the host's OS tree, read-only, secrets hidden) or dir:PATH\n"
    "  --snapshot S        start from a snapshot (digest, prefix or label)\n"
    "  --policy P          strict, dev, open or a policy file: caps everything else (options may\n"
    "                      narrow it, never widen it)\n"
    "  --agent-policy P    the agent phase's policy (may only narrow): 'sbx phase ID agent' switches\n"
    "  --secret NAME[=FILE]  give the host variable NAME (or FILE's content, as /run/secrets/NAME)\n"
    "                      to the setup phase; never stored (repeatable)\n"
    "  --hide PATH         PATH does not exist inside (repeatable)\n"
    "  --name N            a unique name usable wherever an id is\n"
    "  -v, --volume H:P[:ro|rw]  bind host directory H at P inside\n"
    "  --env K=V           environment variable for every command (repeatable)\n"
    "  --network MODE      none (default: loopback only), allow=HOST[:PORT],... (HTTP(S) through\n"
    "                      the egress proxy to those hosts only) or open (the host network, unsafe)\n"
    "  --memory SIZE       memory limit (default 1g; e.g. 512m)\n"
    "  --pids N            process limit (default 1024)\n"
    "  --disk SIZE         quota on the writable layer, at least 4m: writes beyond it fail with\n"
    "                      ENOSPC inside (root: an ext4 image on a loop device; run: a tmpfs)\n"
    "  --cpus X            CPU limit in cores (e.g. 0.5)\n"
    "  --timeout DURATION  default per-command timeout (e.g. 30s)\n"
    "  --ttl DURATION      destroy the environment after it has been idle this long\n"
    "  --ttl-keep          ...but keep its state (writable layer) for sbx snapshot; sbx rm removes it\n"
    "  --idle-suspend DURATION  after this long idle, suspend: processes end, files stay on disk;\n"
    "                      the next exec or file call starts it again, same id (docs/warm.md)\n"
    "  --output-limit SIZE cap on captured output per stream (default 10m)\n"
    "  -u, --user U        run every command as U: UID[:GID] or NAME[:GROUP] from the environment's\n"
    "                      /etc/passwd and /etc/group (default root; --policy strict: 65534:65534).\n"
    "                      A non-root user has no capabilities, and no_new_privs (no su/sudo/setuid)\n"
    "  --cap-drop CAP      a capability that commands run as root do not get (CHOWN or CAP_CHOWN;\n"
    "                      ALL: every one); repeatable. By default root keeps the safe set that\n"
    "                      apt-get and pip need: CHOWN DAC_OVERRIDE FOWNER FSETID KILL SETGID SETUID\n"
    "                      SETPCAP NET_BIND_SERVICE SYS_CHROOT SETFCAP (inside its user namespace)\n"
    "  --cap-add CAP       give one back after --cap-drop; only within that safe set and the\n"
    "                      policy's \"capabilities\" (anything else is refused)\n"
    "  --device KIND=NAME  a CDI device (nvidia.com/gpu=0, =0:1 a MIG slice, =all), from the specs in\n"
    "                      /etc/cdi and /var/run/cdi or $SBX_CDI_SPEC_DIRS (colon-separated);\n"
    "                      repeatable; a policy allows only its \"devices\" (docs/devices.md)\n";

static const char exec_opts_help[] =
    "EXEC-OPTS:\n"
    "  --cwd DIR           working directory (default /root; a user's: its home, else /tmp)\n"
    "  -u, --user U        run this command as U (UID[:GID] or NAME[:GROUP]) instead of the\n"
    "                      environment's user (a policy whose user is not root refuses root)\n"
    "  --env K=V           extra environment variable (repeatable)\n"
    "  --timeout DURATION  kill the command after this long (reported as timed out)\n"
    "  --no-auto-resume    refuse a paused or suspended environment instead of resuming it\n"
    "  -i                  pass stdin to the command\n"
    "  -t                  allocate a pty inside the environment\n"
    "  -d, --detach        exec only: run in the background and print its process id (p1, ...);\n"
    "                      its output is kept up to --output-limit per stream (sbx ps ID PROC\n"
    "                      --output); only --timeout bounds it, not the environment's default\n"
    "  --trace             record every syscall of the environment while the command runs (prints\n"
    "                      the trace id on stderr; --json: trace_id); replay it with 'sbx replay'\n"
    "  --deterministic     determinism controls (virtual clock from a recorded epoch, seeded\n"
    "                      randomness, fixed hostname, no ASLR, one CPU); on by default with --trace,\n"
    "                      --no-deterministic records the command's real behaviour\n";

static const char common_help[] =
    "Every command accepts --json for machine-readable output.\n"
    "Environment: SBX_ROOT (state, default /srv/sbx or ~/.local/share/sbx), SBX_RUN (sockets),\n"
    "SBX_DEBUG=1 (debug log), SBX_MCP_SECRETS=NAME,... (sbx mcp/serve: the host variables an MCP client may\n"
    "name as secrets).\n";

static void usage(FILE *f)
{
	fprintf(f,
		"sbx %s: sandboxed environments for AI agents\n\nUsage: sbx COMMAND [OPTIONS]\n\nCommands:\n",
		sbx_version());
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\n%s%s%s\nRun 'sbx COMMAND --help' for one command.\n", create_opts_help, exec_opts_help,
		common_help);
}

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "sbx: %s: ", cmd);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (see 'sbx %s --help')\n", cmd);
	va_end(ap);
	return EXIT_SBX;
}

int cli_fail(const char *what, sbx_err *e)
{
	fprintf(stderr, "sbx: %s: %s\n", what, sbx_err_message(e));
	sbx_err_free(e);
	return EXIT_SBX;
}

void cli_print_json(json_t *j)
{
	if (!j)
		return;
	char *s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	if (s) {
		puts(s);
		free(s);
	}
	json_decref(j);
}

int cli_open_ctx(cli *c)
{
	sbx_err *e = NULL;
	if (sbx_ctx_open(&c->ctx, &e) < 0)
		return cli_fail("open state directory", e);
	cli_progress_setup(c);
	return 0;
}

int main(int argc, char **argv)
{
	signal(SIGPIPE, SIG_IGN);
	if (argc < 2) {
		usage(stderr);
		return EXIT_SBX;
	}
	const char *name = argv[1];
	if (streq(name, "--help") || streq(name, "-h") || streq(name, "help")) {
		usage(stdout);
		return 0;
	}
	if (streq(name, "--version") || streq(name, "version")) {
		printf("sbx %s\n", sbx_version());
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++) {
		if (!streq(commands[i].name, name))
			continue;
		for (int k = 2; k < argc && !streq(argv[k], "--"); k++)
			if (streq(argv[k], "--help") || streq(argv[k], "-h")) {
				/* The option blocks its usage names, not every command's. */
				printf("Usage: %s\n\n%s\n\n%s%s%s", commands[i].usage, commands[i].help,
				       strstr(commands[i].usage, "CREATE-OPTS") ? create_opts_help : "",
				       strstr(commands[i].usage, "EXEC-OPTS") ? exec_opts_help : "",
				       common_help);
				return 0;
			}
		cli c = {0};
		/* --json anywhere before "--" */
		for (int k = 2; k < argc && !streq(argv[k], "--"); k++)
			if (streq(argv[k], "--json")) {
				c.json = true;
				memmove(argv + k, argv + k + 1, (size_t)(argc - k) * sizeof(char *));
				argc--;
				k--;
			}
		int r = commands[i].run(&c, argc - 1, argv + 1);
		sbx_ctx_free(c.ctx);
		return r;
	}
	fprintf(stderr, "sbx: unknown command '%s' (see 'sbx --help')\n", name);
	return EXIT_SBX;
}
