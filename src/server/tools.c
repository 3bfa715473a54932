/* The MCP tools (see tools.h): the table, one row per tool whose
 * capability exists, in the order tools/list publishes them; the schemas'
 * loading and start-up check; argument validation and results. The
 * handlers and their schemas live by family in tools_*.c
 * (tools_internal.h), the schema checker in jschema.c.
 *
 * Tools whose capability has not landed are not listed at all: a client
 * must never see a tool that can only fail. Arguments of such capabilities
 * on listed tools (a row's reserved) are accepted by the validator and
 * answered with an `unavailable` tool error that says what to do. */
#include "server/tools.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/jschema.h"
#include "server/tools_internal.h"
#include "util/err.h"
#include "util/json.h"
#include "util/macro.h"

/* The built-in profiles (sbx_policy_list(), loaded by tools_init): the
 * schemas' "@profiles" placeholders become their names and descriptions. */
static json_t *profiles;	     /* [{"name", "description", ...}] */
static char profile_names[256] = ""; /* "strict, dev, open" */

bool tools_profile_known(const char *name)
{
	size_t i;
	json_t *p;
	json_array_foreach(profiles, i, p) if (streq(json_str(p, "name") ?: "", name)) return true;
	return false;
}

const char *tools_profile_names(void)
{
	return profile_names;
}

/* ---- the table ------------------------------------------------------------ */

static const char *const create_reserved[] = {NULL};
static const char *const execute_binary[] = {"stdin", NULL};
static const char *const write_binary[] = {"content", NULL};
static const char *const execute_reserved[] = {NULL};
static const tool tools[] = {
    {
	.name = "environment_fork",
	.alias = "environment.fork",
	.title = "Start a new environment from a snapshot",
	.description =
	    "Create a new environment whose filesystem starts as a snapshot's (a fork): the same as "
	    "environment_create with snapshot. Use it to try several continuations of one state side by "
	    "side; each fork is independent and costs no copy.",
	.input_schema = tool_environment_fork_in,
	.output_schema = tool_environment_create_out,
	.run = tool_environment_fork,
	.undo = tool_environment_create_undo,
    },
    {
	.name = "environment_inspect",
	.alias = "environment.inspect",
	.title = "Describe an environment",
	.description =
	    "Everything about one environment: state, template and base snapshot, limits, the user and "
	    "capabilities its commands run with, the isolation walls in force and any missing, usage.",
	.input_schema = TOOLS_ENV_ONLY_IN,
	.output_schema = TOOLS_ANY_OUT,
	.read_only = true,
	.idempotent = true,
	.run = tool_environment_inspect,
    },
    {
	.name = "environment_logs",
	.alias = "environment.logs",
	.title = "Show an environment's network log",
	.description =
	    "The egress proxy's log of an environment created with a network allowlist: each connection "
	    "it allowed or refused, with the host, port and the rule that decided. Use it to see why a "
	    "download failed.",
	.input_schema = TOOLS_ENV_ONLY_IN,
	.output_schema = TOOLS_ANY_OUT,
	.read_only = true,
	.run = tool_environment_logs,
    },
    {
	.name = "template_list",
	.alias = "template.list",
	.title = "List templates",
	.description =
	    "The named templates environment_create accepts as template (besides host and dir:PATH): "
	    "imported images and named snapshots, with their snapshot_id and size.",
	.input_schema = TOOLS_LIST_IN,
	.output_schema = TOOLS_ANY_OUT,
	.read_only = true,
	.idempotent = true,
	.run = tool_template_list,
    },
    {
	.name = "environment_upload",
	.alias = "environment.upload",
	.title = "Upload a directory tree into an environment",
	.description =
	    "Unpack a tar archive (base64) into a directory inside a live environment, as the "
	    "environment's user: many files in one call. For one file, environment_write_file is simpler.",
	.input_schema = tool_environment_upload_in,
	.output_schema = tool_environment_upload_out,
	.destructive = true,
	.run = tool_environment_upload,
    },
    {
	.name = "environment_download",
	.alias = "environment.download",
	.title = "Download a directory tree from an environment",
	.description =
	    "A directory inside a live environment as one tar archive (base64): its files, directories "
	    "and symlinks with their modes and times. For one file, environment_read_file is simpler.",
	.input_schema = tool_environment_download_in,
	.output_schema = tool_environment_download_out,
	.read_only = true,
	.run = tool_environment_download,
    },
    {
	.name = "environment_create",
	.alias = "environment.create",
	.title = "Create a sandboxed environment",
	.description =
	    "Create a new isolated Linux environment (its own filesystem view, processes, and no "
	    "network) and return its environment_id. Pass that id to environment_execute, the file "
	    "tools and environment_destroy. Environments persist across calls until destroyed: reuse "
	    "one for related steps, and destroy it when done. By default the root filesystem is the "
	    "host OS, read-only, under a private writable layer, so installed tools are available and "
	    "changes stay inside.",
	.input_schema = tool_environment_create_in,
	.output_schema = tool_environment_create_out,
	.reserved = create_reserved,
	.run = tool_environment_create,
	.undo = tool_environment_create_undo,
    },
    {
	.name = "environment_execute",
	.alias = "environment.execute",
	.title = "Run a command in an environment",
	.description =
	    "Run a command inside a live environment and wait for it. Give command (a shell string "
	    "run by /bin/sh -c, so pipes and redirections work) or argv (no shell). Returns "
	    "exit_code, stdout, stderr, timed_out and duration_ms. A command that exits non-zero is "
	    "still a successful call: read exit_code and stderr. Files written persist for later "
	    "calls in the same environment. Long-running commands report output as progress when "
	    "the request carries a progressToken.",
	.input_schema = tool_environment_execute_in,
	.output_schema = tool_environment_execute_out,
	.reserved = execute_reserved,
	.destructive = true,
	.binary = execute_binary,
	.run = tool_environment_execute,
    },
    {
	.name = "environment_destroy",
	.alias = "environment.destroy",
	.title = "Destroy an environment",
	.description = "Destroy a live environment: kill every process in it and delete its files. The "
		       "environment_id is invalid afterwards.",
	.input_schema = TOOLS_ENV_ONLY_IN,
	.output_schema = tool_environment_destroy_out,
	.destructive = true,
	.idempotent = true,
	.run = tool_environment_destroy,
    },
    {
	.name = "environment_pause",
	.alias = "environment.pause",
	.title = "Pause an environment",
	.description = "Freeze every process of a live environment: memory is kept, nothing runs and "
		       "command timeouts stand still. The next environment_execute or file call resumes it "
		       "first; environment_resume does so explicitly.",
	.input_schema = TOOLS_ENV_ONLY_IN,
	.output_schema = tool_environment_pause_out,
	.idempotent = true,
	.run = tool_environment_pause,
    },
    {
	.name = "environment_resume",
	.alias = "environment.resume",
	.title = "Resume an environment",
	.description = "Thaw a paused environment, or start a suspended (idle_suspend_ms) or stopped one "
		       "again on its files with the same environment_id; then restarted is true and the "
		       "processes it had are gone.",
	.input_schema = TOOLS_ENV_ONLY_IN,
	.output_schema = tool_environment_pause_out,
	.idempotent = true,
	.run = tool_environment_resume,
    },
    {
	.name = "pool_set",
	.alias = "pool.set",
	.title = "Keep environments built ahead",
	.description =
	    "Keep size environments of a template or snapshot (under an optional policy) built and "
	    "waiting, so that environment_create with the same template or snapshot and policy and no "
	    "other option returns at once (from_pool: true). Refilled in the background. remove: "
	    "true removes the pool.",
	.input_schema = tool_pool_set_in,
	.output_schema = tool_pool_set_out,
	.idempotent = true,
	.run = tool_pool_set,
    },
    {
	.name = "pool_list",
	.alias = "pool.list",
	.title = "List warm pools",
	.description = "List the warm pools: source, policy, size and how many environments are ready.",
	.input_schema = TOOLS_LIST_IN,
	.output_schema = tool_pool_list_out,
	.read_only = true,
	.idempotent = true,
	.run = tool_pool_list,
    },
    {
	.name = "environment_list",
	.alias = "environment.list",
	.title = "List environments",
	.description = "List the environments that exist, with their environment_id, name, state and "
		       "creation time. Use it to find an id again or to clean up.",
	.input_schema = TOOLS_LIST_IN,
	.output_schema = tool_environment_list_out,
	.read_only = true,
	.idempotent = true,
	.run = tool_environment_list,
    },
    {
	.name = "environment_read_file",
	.alias = "environment.read_file",
	.title = "Read a file in an environment",
	.description = "Read a regular file inside a live environment. Text comes back as UTF-8; use "
		       "encoding base64 for binary files. size is the full file size and truncated "
		       "tells whether max_bytes cut it.",
	.input_schema = tool_environment_read_file_in,
	.output_schema = tool_environment_read_file_out,
	.read_only = true,
	.idempotent = true,
	.run = tool_environment_read_file,
    },
    {
	.name = "environment_write_file",
	.alias = "environment.write_file",
	.title = "Write a file in an environment",
	.description = "Create or replace a regular file inside a live environment (its parent directory "
		       "must exist; create it with environment_execute and mkdir -p). Use this rather "
		       "than shell quoting for file content.",
	.input_schema = tool_environment_write_file_in,
	.output_schema = tool_environment_write_file_out,
	.destructive = true,
	.idempotent = true,
	.binary = write_binary,
	.run = tool_environment_write_file,
    },
    {
	.name = "environment_list_files",
	.alias = "environment.list_files",
	.title = "List a directory in an environment",
	.description = "List the entries of a directory inside a live environment: name, type (file, "
		       "dir, symlink, other), size and mode.",
	.input_schema = tool_environment_list_files_in,
	.output_schema = tool_environment_list_files_out,
	.read_only = true,
	.idempotent = true,
	.run = tool_environment_list_files,
    },
    {
	.name = "environment_snapshot",
	.alias = "environment.snapshot",
	.title = "Snapshot an environment",
	.description = "Capture the filesystem of an environment (its processes are frozen meanwhile) as "
		       "an immutable, content-addressed snapshot and return its snapshot_id. Take one "
		       "before a risky step; environment_restore rolls back to it, and environment_create "
		       "with snapshot starts new environments (forks) from it. Running processes are not "
		       "part of a snapshot.",
	.input_schema = tool_environment_snapshot_in,
	.output_schema = tool_environment_snapshot_out,
	.run = tool_environment_snapshot,
    },
    {
	.name = "environment_restore",
	.alias = "environment.restore",
	.title = "Roll an environment back to a snapshot",
	.description = "Roll a live environment back in place to a snapshot: every process in it is "
		       "ended, and its filesystem becomes exactly the snapshot's. The environment_id "
		       "stays the same.",
	.input_schema = tool_environment_restore_in,
	.output_schema = tool_environment_restore_out,
	.destructive = true,
	.idempotent = true,
	.run = tool_environment_restore,
    },
    {
	.name = "environment_diff",
	.alias = "environment.diff",
	.title = "Show what changed in an environment",
	.description = "List the files and directories that were added, modified or deleted in an "
		       "environment (absolute paths, sorted), since its base (what it was created or last "
		       "restored from) or since a given snapshot_id. Use it to review what a command "
		       "changed before snapshotting or restoring. Modified means any field a snapshot keeps "
		       "changed: content, type, mode, owner, xattrs (ACLs and file capabilities too), a "
		       "symlink's target, a device's number, hard links; not times. A live environment is "
		       "read as it is at that moment.",
	.input_schema = tool_environment_diff_in,
	.output_schema = tool_environment_diff_out,
	.read_only = true,
	.idempotent = true,
	.run = tool_environment_diff,
    },
    {
	.name = "snapshot_list",
	.alias = "snapshot.list",
	.title = "List snapshots",
	.description = "List the snapshots in the store: snapshot_id, label, parent, created_at and "
		       "size_bytes.",
	.input_schema = TOOLS_LIST_IN,
	.output_schema = tool_snapshot_list_out,
	.read_only = true,
	.idempotent = true,
	.run = tool_snapshot_list,
    },
    {
	.name = "snapshot_push",
	.alias = "snapshot.push",
	.title = "Push a snapshot to an OCI registry",
	.description =
	    "Push a snapshot to REGISTRY/REPO:TAG over the OCI distribution API as an OCI image "
	    "(what sbx export writes: docker and skopeo read it). Blobs the registry already has are "
	    "not sent. Credentials come from the host's docker config (~/.docker/config.json or "
	    "$REGISTRY_AUTH_FILE). Returns the manifest digest and what was uploaded or skipped.",
	.input_schema = tool_snapshot_push_in,
	.output_schema = tool_snapshot_push_out,
	.idempotent = true,
	.open_world = true,
	.run = tool_snapshot_push,
    },
    {
	.name = "snapshot_pull",
	.alias = "snapshot.pull",
	.title = "Pull a snapshot from an OCI registry",
	.description =
	    "Pull REGISTRY/REPO:TAG (an sbx snapshot or any OCI or docker image) into the store as a "
	    "snapshot labelled name; every digest is verified before anything is stored. Pass the "
	    "returned snapshot_id (or the label) to environment_create's snapshot to fork it.",
	.input_schema = tool_snapshot_pull_in,
	.output_schema = tool_snapshot_pull_out,
	.open_world = true,
	.run = tool_snapshot_pull,
    },
    {
	.name = "environment_replay",
	.alias = "environment.replay",
	.title = "Replay a traced command and verify it",
	.description =
	    "Re-run a traced command (environment_execute with trace: true) from the snapshot it started "
	    "from, in a fresh environment, under determinism controls (the recorded clock, random seed, "
	    "hostname and pids), and compare exit status, stdout, stderr, filesystem changes and the "
	    "syscall sequence. verdict is match, or diverged with the first divergence: its kind "
	    "(input, exit, stdout, stderr, filesystem, syscall), where, and expected versus actual. A "
	    "divergence is a successful call.",
	.input_schema = tool_environment_replay_in,
	.output_schema = tool_environment_replay_out,
	.read_only = true,
	.run = tool_environment_replay,
    },
    {
	.name = "environment_phase",
	.alias = "environment.phase",
	.title = "Switch an environment from its setup phase to its agent phase",
	.description =
	    "Environments start in the setup phase (created with phases: the setup policy, with its secrets "
	    "and "
	    "network). Switching to the agent phase is for good: every process started in the setup phase "
	    "ends, "
	    "the secrets are removed (variables and /run/secrets files), and the agent policy's narrower "
	    "network "
	    "allowlist and limits apply to later commands. Files written during setup stay. Without phase, "
	    "reports the current phase.",
	.input_schema = tool_environment_phase_in,
	.output_schema = tool_environment_phase_out,
	.destructive = true,
	.run = tool_environment_phase,
    },
    {
	.name = "environment_attest",
	.alias = "environment.attest",
	.title = "Sign an attestation of a traced command",
	.description =
	    "Sign, with the server's key, a DSSE envelope holding an in-toto Statement v1 of a traced "
	    "command "
	    "(environment_execute with trace: true): its subjects are stdout, stderr and every file the "
	    "command "
	    "wrote, by sha256; its predicate the snapshot it started from, the command, environment, exit "
	    "status "
	    "and trace_id. Anyone with the public key can check it (sbx verify). Call it before changing the "
	    "environment further. unavailable if the server was started without --attest-key.",
	.input_schema = tool_environment_attest_in,
	.output_schema = tool_environment_attest_out,
	.run = tool_environment_attest,
    },
    {
	.name = "template_build",
	.alias = "template.build",
	.title = "Build a template from a Dockerfile",
	.description =
	    "Build a template (environment_create template: NAME) from Dockerfile text and a host context "
	    "directory the operator allowed. Each step is a snapshot, cached: a step whose parent, "
	    "instruction "
	    "and input files are unchanged costs nothing, so after editing one RUN only that step and the "
	    "ones "
	    "after it run. RUN has no network unless network allows it. An instruction sbx cannot honour "
	    "(HEALTHCHECK, VOLUME, RUN --mount, multi-stage, heredocs) is an error naming its line; a "
	    "failing "
	    "RUN is an error with its exit status and output, and leaves an existing template unchanged.",
	.input_schema = tool_template_build_in,
	.output_schema = tool_template_build_out,
	.run = tool_template_build,
    },
    {
	.name = "environment_process_list",
	.alias = "environment.process_list",
	.title = "List background processes",
	.description =
	    "The background processes of an environment (environment_execute with background: true), oldest "
	    "first: process_id, pid, command, state (running or exited), exit_code or signal, duration and "
	    "how "
	    "much output each kept. Use it to find a process_id or to check what is still running.",
	.input_schema = TOOLS_ENV_ONLY_IN,
	.output_schema = tool_environment_process_list_out,
	.read_only = true,
	.idempotent = true,
	.run = tool_environment_process_list,
    },
    {
	.name = "environment_process_output",
	.alias = "environment.process_output",
	.title = "Read a background process's output",
	.description =
	    "What a background process printed, from byte offsets on (bounded by max_bytes per stream): pass "
	    "the returned stdout_offset and stderr_offset to the next call to read only what is new, e.g. to "
	    "follow a server's log. exited says whether it has ended (then exit_code or signal are set).",
	.input_schema = tool_environment_process_output_in,
	.output_schema = tool_environment_process_output_out,
	.read_only = true,
	.run = tool_environment_process_output,
    },
    {
	.name = "environment_process_kill",
	.alias = "environment.process_kill",
	.title = "Signal a background process",
	.description =
	    "Send a signal (default TERM) to a background process and its process group, e.g. to stop a "
	    "server. delivered is false if it had exited already. Follow with environment_process_wait to "
	    "see "
	    "it end.",
	.input_schema = tool_environment_process_kill_in,
	.output_schema = tool_environment_process_kill_out,
	.destructive = true,
	.run = tool_environment_process_kill,
    },
    {
	.name = "environment_process_wait",
	.alias = "environment.process_wait",
	.title = "Wait for a background process",
	.description =
	    "Wait up to timeout_ms for a background process to exit and return its record: state exited with "
	    "exit_code (or signal), or state running if it is still running when the time is up. Use "
	    "environment_process_output for what it printed.",
	.input_schema = tool_environment_process_wait_in,
	.output_schema = tool_environment_process_wait_out,
	.read_only = true,
	.run = tool_environment_process_wait,
    },
    {
	.name = "snapshot_export",
	.alias = "snapshot.export",
	.title = "Export a snapshot as an OCI image",
	.description =
	    "Write a snapshot (or a template: template.NAME) as an OCI image layout into a host directory "
	    "the operator allowed, for docker, podman, skopeo or another sbx to use; a built template's CMD, "
	    "ENTRYPOINT, WORKDIR, USER, ENV, EXPOSE and LABEL go into the image config. A path outside the "
	    "allowed directories (after resolving symlinks and '..') is refused. To move snapshots between "
	    "machines through a registry use snapshot_push instead.",
	.input_schema = tool_snapshot_export_in,
	.output_schema = tool_snapshot_export_out,
	.idempotent = true,
	.run = tool_snapshot_export,
    },
    {
	.name = "snapshot_import",
	.alias = "snapshot.import",
	.title = "Import an OCI image as a template",
	.description =
	    "Import an OCI image layout from a host directory the operator allowed as a template "
	    "(environment_create template: NAME): its layers are verified and extracted safely, its Env, "
	    "WorkingDir, User, Cmd and Entrypoint apply to the environments made from it. A path outside "
	    "the allowed directories is refused. For an image in a registry use snapshot_pull.",
	.input_schema = tool_snapshot_import_in,
	.output_schema = tool_snapshot_import_out,
	.run = tool_snapshot_import,
    },
    {
	.name = "environment_run_code",
	.alias = "environment.run_code",
	.title = "Run code in a stateful interpreter",
	.description =
	    "Run a cell of code (python by default) in a Jupyter kernel inside a live environment and wait "
	    "for it: variables, imports and definitions stay for the next call in the same context, as in "
	    "a notebook. Returns results (the value of the last expression, displays such as charts: png "
	    "as base64, also given as image content), stdout, stderr, error {name, value, traceback} if "
	    "the cell raised (still a successful call) and execution_count. Output streams as progress "
	    "when the request carries a progressToken. For shell commands use environment_execute.",
	.input_schema = tool_environment_run_code_in,
	.output_schema = tool_environment_run_code_out,
	.destructive = true,
	.run = tool_environment_run_code,
	.content = tools_code_images,
    },
    {
	.name = "environment_context_create",
	.alias = "environment.context_create",
	.title = "Create a code context",
	.description = "A new code context (its own kernel and state) in a live environment, for "
		       "environment_run_code with context_id: language (default python) and working "
		       "directory cwd (default the user home).",
	.input_schema = tool_environment_context_create_in,
	.output_schema = tool_environment_context_create_out,
	.run = tool_environment_context_create,
    },
    {
	.name = "environment_context_list",
	.alias = "environment.context_list",
	.title = "List code contexts",
	.description = "The code contexts of an environment: context_id, language and cwd of each.",
	.input_schema = TOOLS_ENV_ONLY_IN,
	.output_schema = tool_environment_context_list_out,
	.read_only = true,
	.idempotent = true,
	.run = tool_environment_context_list,
    },
    {
	.name = "environment_context_restart",
	.alias = "environment.context_restart",
	.title = "Restart a code context",
	.description = "Give a code context a fresh kernel: its state (variables, imports) is gone. Use it "
		       "after a run whose error is KernelDied, or to start over.",
	.input_schema = tool_environment_context_restart_in,
	.output_schema = tool_environment_context_restart_out,
	.destructive = true,
	.run = tool_environment_context_restart,
    },
    {
	.name = "environment_context_remove",
	.alias = "environment.context_remove",
	.title = "Remove a code context",
	.description = "Shut a code context's kernel down; its context_id is invalid afterwards.",
	.input_schema = tool_environment_context_restart_in,
	.output_schema = tool_environment_context_remove_out,
	.destructive = true,
	.idempotent = true,
	.run = tool_environment_context_remove,
    },
    {
	.name = "environment_screenshot",
	.alias = "environment.screenshot",
	.title = "Look at an environment's screen",
	.description =
	    "A PNG of the X display inside a live environment (given as image content), with its width and "
	    "height. When no display runs yet, one is started: Xvfb (1024x768) and a window manager, inside "
	    "the environment as its user; start programs on it with environment_execute, background true and "
	    "env DISPLAY=:0. Needs Xvfb, xdotool and scrot in the "
	    "environment (unavailable otherwise). Act on the screen with environment_input.",
	.input_schema = tool_environment_screenshot_in,
	.output_schema = tool_environment_screenshot_out,
	.idempotent = true, /* not read_only: the first call starts the display */
	.run = tool_environment_screenshot,
	.content = tools_screenshot_image,
	.content_only = "png",
    },
    {
	.name = "environment_input",
	.alias = "environment.input",
	.title = "Use an environment's mouse and keyboard",
	.description =
	    "Mouse and keyboard actions on the X display inside a live environment, done in order: click, "
	    "double_click, move, drag, scroll (at x, y in pixels from the top left), type (text) and key "
	    "(an X key name or combination such as Return or ctrl+c). Every action is checked before any "
	    "runs. Starts the display as environment_screenshot does; take a screenshot to see the effect.",
	.input_schema = tool_environment_input_in,
	.output_schema = tool_environment_input_out,
	.destructive = true,
	.run = tool_environment_input,
    },
};
static json_t *schemas[ARRAY_SIZE(tools)][2];
static pthread_once_t schemas_once = PTHREAD_ONCE_INIT;
static int schemas_ok = -1;
static char schemas_error[512];

static json_t *load_schema(const char *text)
{
	_cleanup_free_ char *s = strdup(text);
	if (!s)
		return NULL;
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	return json_loads(s, JSON_REJECT_DUPLICATES, NULL);
}

/* Replaces, under j, every enum ["@profiles"] with the profiles' names and
 * "@profiles" in a description with "name: description; ...". */
static int fill_profiles(json_t *j, const char *described)
{
	const char *k;
	json_t *v;
	if (json_is_array(j)) {
		size_t i;
		json_array_foreach(j, i, v) if (fill_profiles(v, described) < 0) return -1;
		return 0;
	}
	json_object_foreach(j, k, v)
	{
		if (streq(k, "enum") && json_array_size(v) == 1 &&
		    streq(json_string_value(json_array_get(v, 0)) ?: "", "@profiles")) {
			json_t *names = json_array();
			size_t i;
			json_t *p;
			json_array_foreach(profiles, i, p)
			    json_array_append(names, json_object_get(p, "name"));
			if (!names || json_object_set_new(j, k, names) < 0)
				return -1;
		} else if (streq(k, "description") && strstr(json_string_value(v) ?: "", "@profiles")) {
			const char *s = json_string_value(v), *at = strstr(s, "@profiles");
			_cleanup_free_ char *t = NULL;
			if (asprintf(&t, "%.*s%s%s", (int)(at - s), s, described, at + strlen("@profiles")) <
				0 ||
			    json_object_set_new(j, k, json_string(t)) < 0)
				return -1;
		} else if (fill_profiles(v, described) < 0)
			return -1;
	}
	return 0;
}

static int profiles_load(void)
{
	json_t *l = NULL;
	if (sbx_policy_list(&l, NULL) < 0)
		return -1;
	profiles = json_incref(json_object_get(l, "policies"));
	json_decref(l);
	size_t i;
	json_t *p;
	char described[1024] = "";
	json_array_foreach(profiles, i, p)
	{
		snprintf(profile_names + strlen(profile_names), sizeof(profile_names) - strlen(profile_names),
			 "%s%s", i ? ", " : "", json_str(p, "name") ?: "");
		snprintf(described + strlen(described), sizeof(described) - strlen(described), "%s%s: %s",
			 i ? "; " : "", json_str(p, "name") ?: "", json_str(p, "description") ?: "");
	}
	for (size_t k = 0; k < ARRAY_SIZE(tools); k++)
		if (fill_profiles(schemas[k][0], described) < 0)
			return -1;
	return 0;
}

int tools_row_schemas(const tool *t, json_t *ret[2], char **ret_msg)
{
	_cleanup_json_ json_t *in = load_schema(t->input_schema), *out = load_schema(t->output_schema);
	json_t *s[2] = {in, out};
	for (int k = 0; k < 2; k++) {
		if (!s[k]) {
			if (asprintf(ret_msg, "tool %s's %s schema is not valid JSON", t->name,
				     k ? "output" : "input") < 0)
				*ret_msg = NULL;
			return -1;
		}
		/* Publish no schema the validator cannot hold a client to. */
		_cleanup_free_ char *why = NULL;
		if (jschema_supported(s[k], &why) < 0) {
			if (asprintf(ret_msg, "tool %s's %s schema: %s", t->name, k ? "output" : "input",
				     why ? why : "out of memory") < 0)
				*ret_msg = NULL;
			return -1;
		}
	}
	ret[0] = TAKE_PTR(in);
	ret[1] = TAKE_PTR(out);
	return 0;
}

static void schemas_load(void)
{
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++) {
		_cleanup_free_ char *why = NULL;
		if (tools_row_schemas(&tools[i], schemas[i], &why) < 0) {
			snprintf(schemas_error, sizeof(schemas_error), "%s", why ? why : "out of memory");
			return;
		}
	}
	if (profiles_load() < 0) {
		snprintf(schemas_error, sizeof(schemas_error), "the built-in policy profiles did not load");
		return;
	}
	schemas_ok = 0;
}

int tools_init(void)
{
	pthread_once(&schemas_once, schemas_load);
	return schemas_ok;
}

const char *tools_init_error(void)
{
	return tools_init() < 0 ? schemas_error : NULL;
}

const tool *tools_find(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(tools); i++)
		if (streq(tools[i].name, name) || streq(tools[i].alias, name))
			return &tools[i];
	return NULL;
}

json_t *tools_list_json(void)
{
	if (tools_init() < 0)
		return NULL;
	json_t *a = json_array();
	for (size_t i = 0; a && i < ARRAY_SIZE(tools); i++) {
		const tool *t = &tools[i];
		json_t *ann = json_pack("{s:s,s:b,s:b,s:b,s:b}", "title", t->title, "readOnlyHint",
					t->read_only, "destructiveHint", t->destructive, "idempotentHint",
					t->idempotent, "openWorldHint", t->open_world);
		json_array_append_new(a, json_pack("{s:s,s:s,s:s,s:O,s:O,s:o}", "name", t->name, "title",
						   t->title, "description", t->description, "inputSchema",
						   schemas[i][0], "outputSchema", schemas[i][1],
						   "annotations", ann));
	}
	return a;
}

static int fail(char **msg, const char *fmt, ...) _printf_(2, 3);
static int fail(char **msg, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (vasprintf(msg, fmt, ap) < 0)
		*msg = NULL;
	va_end(ap);
	return -1;
}

int tools_validate(const tool *t, const json_t *args, char **ret_msg)
{
	if (tools_init() < 0)
		return fail(ret_msg, "internal error: tool schemas failed to load");
	size_t i = (size_t)(t - tools);
	if (!json_is_object(args))
		return fail(ret_msg, "'arguments' must be an object, not %s", jschema_noun(args));
	if (jschema_check(schemas[i][0], args, t->reserved, ret_msg) < 0)
		return -1;
	/* A NUL byte survives only where bytes are meant (t->binary): a path,
	 * name, argv element or variable would be cut short at it. */
	_cleanup_free_ char *where = NULL;
	int r = json_find_nul(args, t->binary, &where);
	if (r < 0)
		return fail(ret_msg, "out of memory");
	if (r > 0)
		return fail(ret_msg,
			    "'%s' contains NUL (\\u0000), which it cannot carry (a path, name, command "
			    "or variable is a C string)",
			    where);
	return 0;
}

/* ---- results ------------------------------------------------------------- */

static json_t *call_result(json_t *structured, bool is_error)
{
	if (!structured)
		return NULL;
	_cleanup_free_ char *text = json_dumps(structured, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_t *r = json_pack("{s:[{s:s,s:s}],s:o,s:b}", "content", "type", "text", "text",
			      text ? text : "{}", "structuredContent", structured, "isError", is_error);
	return r;
}

json_t *tools_result(json_t *structured)
{
	return call_result(structured, false);
}

json_t *tools_result_of(const tool *t, json_t *structured)
{
	json_t *more = NULL;
	if (t->content && structured) {
		more = t->content(structured);
		if (!more) {
			json_decref(structured);
			return NULL;
		}
		if (t->content_only)
			json_object_del(structured, t->content_only);
	}
	json_t *r = call_result(structured, false);
	if (!r || !more) {
		json_decref(more);
		return r;
	}
	if (json_array_extend(json_object_get(r, "content"), more) < 0) {
		json_decref(more);
		json_decref(r);
		return NULL;
	}
	json_decref(more);
	return r;
}

json_t *tools_error_result(sbx_code code, const char *message)
{
	json_t *m = json_string(message ? message : "unknown error");
	if (!m)
		m = json_string("error (message not valid UTF-8)");
	return call_result(json_pack("{s:{s:s,s:o}}", "error", "code", sbx_code_name(code), "message", m),
			   true);
}

/* Bytes `s` takes once more escaped as a JSON string (the text content item
 * carries the structuredContent again, as a string). */
static size_t escaped_len(const char *s, size_t n)
{
	size_t out = 2;
	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)s[i];
		out += ch == '"' || ch == '\\' ? 2 : ch < 0x20 ? 6 : 1;
	}
	return out;
}

size_t tools_result_size(const json_t *structured)
{
	_cleanup_free_ char *d = json_dumps(structured, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!d)
		return SIZE_MAX;
	size_t n = strlen(d);
	return n + escaped_len(d, n) + 128;
}

/* Cuts the longer of stdout and stderr until the whole CallToolResult fits
 * in `budget` bytes, setting its *_truncated flag: a command's output must
 * never make a message that a client refuses (the TypeScript SDK's stdio
 * transport drops the connection at 10 MiB) or that costs the server an
 * unbounded amount of memory. Cuts fall on a UTF-8 character boundary. */
int tools_fit_output(json_t *res, size_t budget)
{
	for (int round = 0; round < 64; round++) {
		size_t total = tools_result_size(res);
		if (total == SIZE_MAX)
			return -ENOMEM;
		if (total <= budget)
			return 0;
		json_t *so = json_object_get(res, "stdout"), *se = json_object_get(res, "stderr");
		size_t lo = json_string_length(so), le = json_string_length(se);
		if (lo == 0 && le == 0)
			return -E2BIG;
		bool out = lo >= le;
		json_t *str = out ? so : se;
		size_t len = out ? lo : le;
		/* Shrink in proportion to the excess, and by at least an eighth. */
		size_t want = (size_t)((double)len * ((double)budget / (double)total) * 0.9);
		if (want > len - len / 8)
			want = len - len / 8;
		const char *v = json_string_value(str);
		while (want > 0 && ((unsigned char)v[want] & 0xC0) == 0x80)
			want--;
		json_t *cut = json_stringn_nocheck(v, want);
		if (!cut || json_object_set_new(res, out ? "stdout" : "stderr", cut) < 0 ||
		    json_object_set_new(res, out ? "stdout_truncated" : "stderr_truncated", json_true()) < 0)
			return -ENOMEM;
	}
	return -E2BIG;
}
