/* The pure parts of envd's process.Process service (e2b_process.c): the
 * request messages as E2B's SDK sends them (the proto3 JSON of envd's
 * spec/envd/process/process.proto) read into C, and the messages answered.
 * No I/O; unit-tested in tests/unit/test_e2b_proc_util.c.
 *
 * Start's request: {"process":{"cmd","args":[...],"envs":{K:V},"cwd"},
 * "pty":{"size":{"cols","rows"}}, "tag", "stdin"}; cmd is required; stdin
 * absent (or null) is open, as envd keeps it for clients older than the
 * field (handler.go: `req.Stdin == nil || req.GetStdin()`); a cwd
 * that is not absolute is under the user's home (envd's rule); envs keys
 * are non-empty without '=' or NUL. A ProcessSelector is {"pid":N} (a
 * number, or a string of digits: proto3 JSON writes uint32 as a number but
 * accepts both) or {"tag":"..."}. Signals are the Signal enum's names
 * (SIGNAL_SIGKILL, SIGNAL_SIGTERM) or its numbers. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "util/err.h"

#define E2B_PROC_ARGS_MAX 4096 /* args of one command */
#define E2B_PROC_ENVS_MAX 1024 /* per-call envs of one command */
#define E2B_PTY_DIM_MAX 4096   /* cols or rows */

typedef struct e2b_start_req {
	char **argv; /* cmd then args, NULL-terminated */
	char **env;  /* "K=V", NULL-terminated (possibly empty) */
	char *cwd;   /* absolute */
	char *tag;   /* NULL: none */
	bool stdin_open;
	bool pty;
	uint16_t cols, rows; /* with pty */
	json_t *config;	     /* {cmd, args, envs, cwd}: what List answers */
} e2b_start_req;

/* The home of user (NULL: root's): /root for root, else /home/<user>. */
const char *e2b_user_home(const char *user, char *buf, size_t size);
/* Reads Start's request; home resolves a relative cwd. -EINVAL with err
 * (invalid_argument) for a malformed one. */
int e2b_start_parse(const json_t *in, const char *home, e2b_start_req *ret, sbx_err **err);
void e2b_start_req_clear(e2b_start_req *r);
/* The environment of a command of sandbox: envd's defaults (E2B_SANDBOX=true,
 * E2B_SANDBOX_ID=<sandbox>) then env, a name env sets leaving its default
 * out (the request's own win). A new NULL-terminated list (strv_free), or
 * NULL when out of memory. */
char **e2b_env_with_defaults(char *const *env, const char *sandbox);
/* Whether a command's failure is its environment going under it (killed,
 * removed at its deadline, restored from a snapshot, its supervisor gone):
 * sbx_env_exec's unavailable with ESRCH (the supervisor's "the environment
 * was stopped while the command ran") or EPIPE (its socket closed). */
bool e2b_env_went(const sbx_err *e);

typedef struct e2b_selector {
	uint32_t pid; /* 0: by tag */
	const char *tag;
} e2b_selector;
/* Reads the ProcessSelector in->key ("process"): -EINVAL when missing or malformed. */
int e2b_selector_parse(const json_t *in, const char *key, e2b_selector *ret, sbx_err **err);
/* Signal names and numbers: SIGNAL_SIGKILL -> 9, SIGNAL_SIGTERM -> 15 (and
 * other SIGNAL_SIG<NAME>s); -EINVAL for SIGNAL_UNSPECIFIED and the rest. */
int e2b_signal_parse(const json_t *v, int *ret, sbx_err **err);
/* Reads a PTY size {"size":{"cols","rows"}} (in->key): -EINVAL if missing
 * or a dimension is outside 1..E2B_PTY_DIM_MAX. */
int e2b_pty_size_parse(const json_t *in, const char *key, uint16_t *ret_cols, uint16_t *ret_rows,
		       sbx_err **err);
/* The bytes of SendInput's {"input":{"stdin"|"pty": base64}}: *ret_pty
 * says which; malloc'd (may be empty). -EINVAL for a bad one. */
int e2b_input_parse(const json_t *in, unsigned char **ret, size_t *ret_len, bool *ret_pty, sbx_err **err);

/* The end event of a process that exited with exit_code, or was killed by
 * signal (exit_code then ignored), as envd (Go's os.ProcessState) words
 * it: {"event":{"end":{"exitCode","exited","status","error"?}}}; error
 * (NULL: the status when it is not "exit status 0", as Go's cmd.Wait()
 * error reads). */
json_t *e2b_end_event(int exit_code, int signal, const char *error);
/* {"event":{"data":{"stdout"|"stderr"|"pty": base64}}}: kind 1 stdout, 2 stderr, 3 pty. */
json_t *e2b_data_event(int kind, const void *data, size_t len);
