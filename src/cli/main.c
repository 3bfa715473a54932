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
    {"run", CLI_GROUP_ENV, cmd_run, "Create an environment, run one command in it, remove it",
     "sbx run [CREATE-OPTS] [EXEC-OPTS] [-- CMD [ARG...]]",
     "Create an environment, run one command in it, destroy it. Exits with the command's status. With "
     "an image template (--template NAME): its ENTRYPOINT before CMD, and with no CMD given its own CMD, "
     "as docker run does. SIGINT, SIGTERM, SIGHUP and SIGQUIT go to the command; killed in any way, sbx "
     "run leaves nothing behind (its supervisor removes the environment)."},
    {"create", CLI_GROUP_ENV, cmd_create, "Create a live environment and print its id",
     "sbx create [CREATE-OPTS]", "Create a live environment and print its id."},
    {"exec", CLI_GROUP_CMD, cmd_exec, "Run a command in a live environment",
     "sbx exec [EXEC-OPTS] [-d] ID -- CMD [ARG...]",
     "Run a command in a live environment, streaming stdio. Exits with its status (128+N on signal N); "
     "SIGINT, SIGTERM, SIGHUP and SIGQUIT go to the command. -d: in the background, printing its process id "
     "(sbx ps ID, sbx kill ID PROC)."},
    {"ls", CLI_GROUP_ENV, cmd_ls, "List environments", "sbx ls", "List environments."},
    {"inspect", CLI_GROUP_ENV, cmd_inspect, "Show an environment's limits, walls and usage", "sbx inspect ID",
     "Show an environment: limits, isolation walls in force and missing, usage."},
    {"port", CLI_GROUP_ENV, cmd_port, "List an environment's published ports", "sbx port ID [PORT]",
     "List the ports published with create's -p: one line a mapping, PORT/tcp -> HOSTIP:HOSTPORT "
     "(the host port chosen at create where -p gave 0); with PORT, only that port's. --json: "
     "{environment_id, ports: [{port, protocol, host_ip, host_port}]}. See docs/ports.md."},
    {"ps", CLI_GROUP_CMD, cmd_ps, "List an environment's processes and background processes",
     "sbx ps ID | sbx ps ID PROC [--output] [--wait DURATION]",
     "List the processes inside an environment (pids as seen inside) and its background processes "
     "(exec -d); with PROC, one background process: its record, --output what it printed (stdout, "
     "stderr), --wait until it exits (at most DURATION; exit status 0 once exited, 1 still running)."},
    {"kill", CLI_GROUP_CMD, cmd_kill, "Signal a background process", "sbx kill ID PROC [SIGNAL]",
     "Send a signal (default TERM; a name such as KILL or INT, or a number) to a background process "
     "(exec -d) and its process group."},
    {"code", CLI_GROUP_CMD, cmd_code, "Run code in a stateful kernel (Python, ...)",
     "sbx code ID [--context C | --lang L] [--timeout DURATION] [--env K=V] [--out DIR] [-- CODE... | < "
     "FILE] "
     "| sbx code ID --contexts | --new-context [--lang L] [--cwd DIR] | --restart C | --remove C",
     "Run code in a Jupyter kernel inside the environment (a context), whose state lasts from one run to the "
     "next; without --context the language's default context runs it (--lang, default python). The code is "
     "the "
     "words after -- or stdin. stdout and stderr stream as they come; results print as text, images go to "
     "DIR/out-N.png (--out), an error's traceback to stderr. --timeout interrupts the cell and keeps the "
     "context; --env sets variables for this run only. --json: the whole result (images as base64). Exit "
     "status: 0, 1 when the code raised, 124 on timeout, 125 for sbx errors. --contexts lists contexts, "
     "--new-context makes one (printing its id), --restart gives one a fresh kernel (its state gone), "
     "--remove ends one. The environment needs python3 with jupyter_client and ipykernel and a network "
     "namespace of its own (not --network open); docs/code.md."},
    {"phase", CLI_GROUP_ENV, cmd_phase, "Show an environment's phase, or switch it to agent",
     "sbx phase ID [agent]",
     "Show an environment's phase, or switch it for good from setup to agent: its processes end, its "
     "secrets are removed, the agent policy's network and limits apply."},
    {"logs", CLI_GROUP_ENV, cmd_logs, "Show the egress proxy's log of an environment", "sbx logs ID --net",
     "Show the egress proxy's log of an environment with network allow: each connection, allowed or "
     "refused."},
    {"cp", CLI_GROUP_FILES, cmd_cp, "Copy files or trees between the host and an environment",
     "sbx cp SRC DST",
     "Copy a file or a directory tree between the host and an environment (ID:PATH on one side). Into an "
     "existing directory under the source's name, else as the new name. Ownership becomes the receiving "
     "side's user; setuid bits and devices are dropped."},
    {"rm", CLI_GROUP_ENV, cmd_rm, "Stop and remove environments", "sbx rm ID...",
     "Stop and remove environments: processes, cgroups and files."},
    {"pause", CLI_GROUP_ENV, cmd_pause, "Freeze every process of an environment", "sbx pause ID",
     "Freeze every process of an environment (memory kept, timeouts stopped); an exec resumes it."},
    {"pool", CLI_GROUP_ENV, cmd_pool, "Keep environments of a template built ahead",
     "sbx pool set TEMPLATE|SNAPSHOT --size N [--policy P] [--code] | sbx pool ls | sbx pool rm "
     "TEMPLATE|SNAPSHOT [--policy P] [--code]",
     "Keep N environments of a template or snapshot built ahead; a create or run with the same template "
     "(or snapshot) and policy and no other option takes one (from_pool). Refilled in the background. "
     "SBX_POOL_LAYER=tmpfs at set (root): the entries' writable layer is a tmpfs (memory; docs/warm.md). "
     "--code: each entry also has the code interpreter's kernel started; creates with --code (MCP code, "
     "E2B code-interpreter-v1) take those (docs/code.md)."},
    {"resume", CLI_GROUP_ENV, cmd_resume, "Thaw a paused environment, or start a suspended one",
     "sbx resume ID",
     "Thaw a paused environment, or start a suspended or stopped one again on its files (same id; its "
     "processes are gone)."},
    {"snapshot", CLI_GROUP_SNAP, cmd_snapshot, "Capture an environment as a content-addressed snapshot",
     "sbx snapshot ID [--label L]",
     "Capture an environment (frozen meanwhile) as a content-addressed snapshot; prints sha256:<hex>."},
    {"restore", CLI_GROUP_SNAP, cmd_restore, "Roll an environment back in place to a snapshot",
     "sbx restore ID SNAPSHOT",
     "Roll an environment back in place to a snapshot (digest, prefix or label); its processes end."},
    {"fork", CLI_GROUP_SNAP, cmd_fork, "Create an environment from a snapshot",
     "sbx fork SNAPSHOT [CREATE-OPTS]", "Create a new environment from a snapshot (as create --snapshot)."},
    {"snapshots", CLI_GROUP_SNAP, cmd_snapshots, "List or delete snapshots", "sbx snapshots [rm REF...]",
     "List snapshots with label, parent, time and size; 'rm REF...' deletes snapshots (digest, prefix or "
     "label) and their labels (refused while an environment started from one exists); their layers go at "
     "the next 'sbx gc'."},
    {"diff", CLI_GROUP_SNAP, cmd_diff, "Show what changed since a snapshot", "sbx diff ID [SNAPSHOT]",
     "Show what changed in an environment since its base or a snapshot: A/M/D lines, sorted by path."},
    {"export", CLI_GROUP_IMG, cmd_export, "Write a snapshot as an OCI image layout",
     "sbx export SNAPSHOT oci:DIR[:TAG]",
     "Write a snapshot as an OCI image (gzip layers) into an OCI image layout."},
    {"import", CLI_GROUP_IMG, cmd_import, "Import an OCI image layout as a template",
     "sbx import oci:DIR[:TAG] [--name N]",
     "Import an OCI image layout as a template (default name: the tag or DIR's name)."},
    {"push", CLI_GROUP_IMG, cmd_push, "Push a snapshot to an OCI registry",
     "sbx push SNAPSHOT REGISTRY/REPO:TAG [--insecure]",
     "Push a snapshot to an OCI registry as sbx export writes it (blobs the registry has are not sent); "
     "credentials from ~/.docker/config.json or $REGISTRY_AUTH_FILE; --insecure: plain HTTP."},
    {"pull", CLI_GROUP_IMG, cmd_pull, "Pull an image from an OCI registry as a snapshot",
     "sbx pull REGISTRY/REPO:TAG [--name N] [--insecure]",
     "Pull a snapshot (or any image) from an OCI registry, every digest verified; labels it N (default: the "
     "repository's last component) and prints its digest."},
    {"template", CLI_GROUP_IMG, cmd_template, "Name a template, or list templates",
     "sbx template add NAME oci:DIR[:TAG]|dir:PATH|host|SNAPSHOT | sbx template ls",
     "Name a template for create --template NAME; list templates."},
    {"build", CLI_GROUP_IMG, cmd_build, "Build a template from a Dockerfile",
     "sbx build [-f Dockerfile] -t NAME [--network MODE] [--build-arg K=V] [--secret NAME[=FILE]] "
     "[--no-cache] CONTEXT",
     "Build a template from a Dockerfile (FROM a template, snapshot, oci:DIR[:TAG] or scratch; RUN, COPY, "
     "ADD, "
     "ENV, ARG, WORKDIR, USER, LABEL, SHELL, CMD, ENTRYPOINT, EXPOSE). Each step is a cached snapshot; RUN "
     "has "
     "no network unless --network allows it; secrets are never stored. See docs/build.md."},
    {"policy", CLI_GROUP_ENV, cmd_policy, "List, show or check policies",
     "sbx policy ls | show NAME|FILE | check FILE",
     "List the built-in policies (strict, dev, open), show one, or validate a policy file."},
    {"trace", CLI_GROUP_TRACE, cmd_trace, "List, show, summarize, export or draw recorded traces",
     "sbx trace ls | show TRACE [--pid P] [--syscall NAME,...] | stats TRACE | export TRACE --format chrome "
     "[-o FILE] | html TRACE [-o FILE] [--replay[=RESULT.json]] | inspect TRACE",
     "List recorded traces, print one strace-like, summarize it, export it for Perfetto, draw it as one "
     "self-contained HTML page (with a replay's divergence highlighted), or show its manifest."},
    {"replay", CLI_GROUP_TRACE, cmd_replay, "Re-run a traced command and compare: MATCH or divergence",
     "sbx replay [--inputs read-set|volumes] TRACE",
     "Re-run a traced command from its snapshot under determinism controls; prints MATCH or the first "
     "divergence (exit 0 only on MATCH). Inputs checked first: the files the run read (default) or whole "
     "volumes."},
    {"keygen", CLI_GROUP_TRACE, cmd_keygen, "Make an Ed25519 key pair for attestations", "sbx keygen FILE",
     "Make an Ed25519 key pair for attestations: FILE (private, 0600) and FILE.pub (PEM); prints its key "
     "id."},
    {"attest", CLI_GROUP_TRACE, cmd_attest, "Sign an attestation (DSSE, in-toto) of a traced run",
     "sbx attest TRACE --key FILE [-o OUT] [--replay]",
     "Sign a DSSE envelope (in-toto Statement v1) of a traced run: its stdout, stderr and written files by "
     "sha256, its snapshot, command and exit status (--replay: replay first, record the verdict)."},
    {"verify", CLI_GROUP_TRACE, cmd_verify, "Check an attestation's signature and digests",
     "sbx verify ENVELOPE --key FILE.pub [--replay]",
     "Check an attestation: the signature, every digest against the store (--replay: and a MATCHing replay); "
     "exit 0 only if all hold."},
    {"gc", CLI_GROUP_MAINT, cmd_gc, "Remove what no live environment reaches", "sbx gc",
     "Remove what no live environment reaches (after a crash or kill -9)."},
    {"fsck", CLI_GROUP_MAINT, cmd_fsck, "Verify every digest and reference in the store", "sbx fsck",
     "Verify every digest and reference in the store; exit 1 if something is corrupt."},
    {"mcp", CLI_GROUP_SRV, cmd_mcp, "Serve MCP on stdin/stdout for an AI agent",
     "sbx mcp [--attest-key FILE] [--allow-host-dir DIR] [--warm N] [--warm-memory SIZE]",
     "Serve MCP (Model Context Protocol) on stdin/stdout for an AI agent (--attest-key: the private key "
     "environment_attest signs with; --allow-host-dir: a host directory clients may name, e.g. as "
     "template_build's context). The server keeps itself warm: a template or snapshot its clients create "
     "from often (five creates within seconds) gets a warm pool sized by the create rate, removed when "
     "the demand goes and when the server stops; at most N ready entries in all (--warm, 64; 0 turns it "
     "off) and SIZE of memory at 4 MiB an entry (--warm-memory, 256M). See docs/warm.md."},
    {"serve", CLI_GROUP_SRV, cmd_serve, "Serve MCP and the E2B API over HTTP",
     "sbx serve --listen ADDR:PORT [--token-file F] [--max-connections N] [--max-connections-per-peer N] "
     "[--idle-timeout SECONDS] [--request-timeout SECONDS] [--max-sessions N] [--max-sessions-per-peer N] "
     "[--session-min-idle SECONDS] [--attest-key FILE] [--allow-host-dir DIR] [--insecure-no-token] "
     "[--warm N] [--warm-memory SIZE] [--domain D] [--policy P]",
     "Serve MCP over Streamable HTTP at POST /mcp (and the JSON-RPC methods) and the E2B API (docs/e2b.md) "
     "on one port; a bearer token from F when given (the E2B API key too). Without --token-file it serves "
     "only on a loopback address (--insecure-no-token: beyond it too, open to whoever reaches it); "
     "--domain D routes a Host of PORT-ID.D to that sandbox's port, as E2B's getHost() names it (wildcard "
     "DNS for *.D is yours); "
     "--policy P (strict, dev, open, a file or inline JSON) caps the network E2B clients may ask for: "
     "its network is a sandbox's default and its ceiling, a request beyond it is refused (403), "
     "without it E2B sandboxes get no network; "
     "--attest-key, --warm and --warm-memory as for mcp. Connections: at most N in total (256) and per peer "
     "address (64), a new "
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
    "                      the egress proxy to those hosts only), internet (the same proxy to every\n"
    "                      public host and port; internal addresses stay out) or open (the host\n"
    "                      network, unsafe)\n"
    "  --memory SIZE       memory limit (default 1g; e.g. 512m)\n"
    "  --pids N            process limit (default 1024)\n"
    "  --disk SIZE         quota on the writable layer, at least 4m: writes beyond it fail with\n"
    "                      ENOSPC inside (root: an ext4 image on a loop device; run: a tmpfs)\n"
    "  --cpus X            CPU limit in cores (e.g. 0.5)\n"
    "  --timeout DURATION  default per-command timeout (e.g. 30s)\n"
    "  --ttl DURATION      destroy the environment after it has been idle this long\n"
    "  --ttl-keep          ...but keep its state (writable layer) for sbx snapshot; sbx rm removes it\n"
    "  --code              for sbx code: take an entry of a pool set with --code, whose kernel is\n"
    "                      already started (docs/code.md; sbx run ignores it)\n"
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
    "  -p, --publish [HOSTIP:]HOSTPORT:PORT\n"
    "                      publish PORT of the environment's own loopback on the host, as\n"
    "                      docker run -p does (repeatable): a TCP connection to HOSTIP:HOSTPORT\n"
    "                      reaches 127.0.0.1:PORT inside, even with network none. HOSTIP is\n"
    "                      127.0.0.1 by default; 0.0.0.0 or another address exposes PORT to the\n"
    "                      network. HOSTPORT 0: a free port (sbx port ID shows it). Lives as\n"
    "                      long as the environment; at most 256 connections at once\n"
    "                      (docs/ports.md)\n"
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
    "Environment: SBX_ROOT (state, default /srv/sbx or ~/.local/share/sbx), SBX_RUN\n"
    "(sockets), SBX_DEBUG=1 (debug log), SBX_MCP_SECRETS=NAME,... (sbx mcp/serve: the\n"
    "host variables an MCP client may name as secrets).\n";

static const char *const group_titles[CLI_GROUP_COUNT] = {
    [CLI_GROUP_ENV] = "Environments",
    [CLI_GROUP_CMD] = "Commands",
    [CLI_GROUP_FILES] = "Files",
    [CLI_GROUP_SNAP] = "Snapshots",
    [CLI_GROUP_IMG] = "Images and registries",
    [CLI_GROUP_TRACE] = "Traces",
    [CLI_GROUP_SRV] = "Servers",
    [CLI_GROUP_MAINT] = "Maintenance",
};

/* `sbx --help`: one short line a command, in groups, as git and docker print
 * theirs; the options and the detail are in `sbx COMMAND --help`. */
static void usage(FILE *f)
{
	fprintf(f, "sbx %s: sandboxed environments for AI agents\n\nUsage: sbx COMMAND [OPTIONS]\n",
		sbx_version());
	for (int g = 0; g < CLI_GROUP_COUNT; g++) {
		fprintf(f, "\n%s:\n", group_titles[g]);
		for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
			if ((int)commands[i].group == g)
				fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	}
	fprintf(f, "\nRun 'sbx COMMAND --help' (or 'sbx help COMMAND') for a command's options and\n"
		   "details, 'man sbx' for all of them. Every command accepts --json.\n");
}

/* `sbx COMMAND --help`: the usage, the detail, and the option blocks the
 * usage names (not every command's). */
/* Prints `text` after `first` (a label of `indent` columns), folded at
 * spaces to lines of at most 80 columns, continuation lines indented. */
static void print_folded(const char *first, const char *text, int indent)
{
	int col = printf("%s", first);
	const char *p = text;
	while (*p) {
		size_t n = 0; /* a word: up to a space outside [brackets] */
		for (int depth = 0; p[n] && (p[n] != ' ' || depth > 0); n++)
			depth += p[n] == '[' ? 1 : p[n] == ']' ? -1 : 0;
		if (col > indent && col + 1 + (int)n > 80)
			col = printf("\n%*s", indent, "") - 1;
		else if (col > indent)
			col += printf(" ");
		col += printf("%.*s", (int)n, p);
		p += n;
		p += strspn(p, " ");
	}
	printf("\n");
}

static void command_help(const cli_cmd *c)
{
	print_folded("Usage: ", c->usage, 7);
	printf("\n");
	print_folded("", c->help, 0);
	printf("\n%s%s%s", strstr(c->usage, "CREATE-OPTS") ? create_opts_help : "",
	       strstr(c->usage, "EXEC-OPTS") ? exec_opts_help : "", common_help);
}

static const cli_cmd *command_find(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (streq(commands[i].name, name))
			return &commands[i];
	return NULL;
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
	if (streq(name, "--help") || streq(name, "-h") || (streq(name, "help") && argc < 3)) {
		usage(stdout);
		return 0;
	}
	if (streq(name, "--version") || streq(name, "version")) {
		printf("sbx %s\n", sbx_version());
		return 0;
	}
	if (streq(name, "help")) { /* sbx help COMMAND, as git's */
		const cli_cmd *cmd = command_find(argv[2]);
		if (!cmd) {
			fprintf(stderr, "sbx: help: unknown command '%s' (see 'sbx --help')\n", argv[2]);
			return EXIT_SBX;
		}
		command_help(cmd);
		return 0;
	}
	const cli_cmd *cmd = command_find(name);
	if (cmd) {
		for (int k = 2; k < argc && !streq(argv[k], "--"); k++)
			if (streq(argv[k], "--help") || streq(argv[k], "-h")) {
				command_help(cmd);
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
		int r = cmd->run(&c, argc - 1, argv + 1);
		sbx_ctx_free(c.ctx);
		return r;
	}
	fprintf(stderr, "sbx: unknown command '%s' (see 'sbx --help')\n", name);
	return EXIT_SBX;
}
