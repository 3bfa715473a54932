/* Reaching the code interpreter's bridge inside an environment, and one
 * HTTP/1.1 exchange with it (code.h, docs/code.md).
 *
 * The bridge (src/interp/code_bridge.py, embedded in the library) listens on
 * the environment's own 127.0.0.1:49999, reached through
 * sbx_env_port_connect. When nothing listens there, it is written into the
 * environment and started as a background process of the environment's
 * user; it listens only once its default kernel is ready, so the first
 * connect that succeeds means ready. Two first calls at once may both start
 * one: the second to bind exits (the port is taken), and its starter finds
 * the port answering, which is success. Everything the bridge sends is the
 * environment's and is parsed by util/http1.h under its bounds. */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "api/api.h"
#include "api/code.h"
#include "util/clock.h"
#include "util/http1.h"
#include "util/json.h"
#include "util/strbuf.h"

extern const unsigned char sbx_code_bridge_py[], sbx_code_bridge_py_end[];
extern const unsigned char sbx_code_kernels_py[], sbx_code_kernels_py_end[];
extern const unsigned char sbx_code_node_js[], sbx_code_node_js_end[];
extern const unsigned char sbx_code_python_py[], sbx_code_python_py_end[];

/* What a bridge start writes into the environment: the bridge, and beside
 * it the kernels it makes known for javascript, typescript and bash
 * (code_bridge.py install_kernel_specs finds them by these names) and the
 * launcher of its Python kernel (code_bridge.py fast_python). */
static const struct {
	const char *path;
	const unsigned char *data, *end;
} bridge_files[] = {
    {CODE_BRIDGE_PATH, sbx_code_bridge_py, sbx_code_bridge_py_end},
    {"/tmp/.sbx-code-kernels.py", sbx_code_kernels_py, sbx_code_kernels_py_end},
    {"/tmp/.sbx-code-node.js", sbx_code_node_js, sbx_code_node_js_end},
    {"/tmp/.sbx-code-ipykernel_launcher.py", sbx_code_python_py, sbx_code_python_py_end},
};

#define START_POLL_MS 20
#define NEEDS "the code interpreter needs python3 with jupyter_client and ipykernel in the environment"

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* The last non-empty line of what the bridge printed on stderr (at most
 * 400 bytes of it): the reason a Python program gives for dying. */
static char *stderr_last_line(sbx_ctx *ctx, const char *ref, const char *pid, const json_t *rec)
{
	int64_t n = json_int(rec, "stderr_bytes", 0), so = json_int(rec, "stdout_bytes", 0);
	_cleanup_json_ json_t *out = NULL;
	if (sbx_process_output(ctx, ref, pid, so, n > 4096 ? n - 4096 : 0, 4096, &out, NULL) < 0)
		return NULL;
	const char *s = json_str(out, "stderr");
	if (!s)
		return NULL;
	size_t len = strlen(s);
	while (len && (s[len - 1] == '\n' || s[len - 1] == '\r' || s[len - 1] == ' '))
		len--;
	size_t start = len;
	while (start && s[start - 1] != '\n')
		start--;
	if (len - start > 400)
		len = start + 400;
	return len > start ? strndup(s + start, len - start) : NULL;
}

/* A refused connect: nothing listens. Not a refusal of the socket itself
 * (EPERM: the environment's network is the host's), where nothing is
 * started: a bridge there would listen on the host's loopback. */
static bool nothing_listens(const sbx_err *e)
{
	return sbx_err_code(e) == SBX_E_UNAVAILABLE && e->errnum == ECONNREFUSED;
}

/* Starts the bridge and waits until it answers: 0 with *ret_fd connected. */
static int bridge_start(sbx_ctx *ctx, const char *ref, int *ret_fd, sbx_err **err)
{
	for (size_t i = 0; i < ARRAY_SIZE(bridge_files); i++) {
		const char *path = bridge_files[i].path;
		const unsigned char *data = bridge_files[i].data;
		size_t len = (size_t)(bridge_files[i].end - data);
		if (sbx_env_write_file(ctx, ref, path, data, len, 0644, err) < 0)
			return err_wrap(err, "start the code interpreter: write %s", path);
	}
	static const char *const argv[] = {"python3", CODE_BRIDGE_PATH, "--port", "49999", NULL};
	sbx_exec_opts x = SBX_EXEC_OPTS_INIT;
	x.argv = argv;
	_cleanup_json_ json_t *started = NULL;
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_process_start(ctx, ref, &x, &started, &e) < 0) {
		if (sbx_err_code(e) == SBX_E_NOT_FOUND)
			return err_set(err, SBX_E_UNAVAILABLE, ENOENT,
				       NEEDS ": python3 is not installed there");
		return err_set(err, sbx_err_code(e), e->errnum, "start the code interpreter: %s",
			       sbx_err_message(e));
	}
	_cleanup_free_ char *pid = strdup(json_str(started, "process_id") ?: "");
	if (!pid)
		return err_oom(err);
	int64_t end = clock_ms(CLOCK_MONOTONIC) + CODE_START_TIMEOUT_MS;
	for (;;) {
		sbx_err_free(e);
		e = NULL;
		if (sbx_env_port_connect(ctx, ref, CODE_BRIDGE_PORT, 0, ret_fd, &e) == 0)
			return 0;
		if (!nothing_listens(e))
			return err_set(err, sbx_err_code(e), e->errnum, "reach the code interpreter: %s",
				       sbx_err_message(e));
		_cleanup_json_ json_t *rec = NULL;
		sbx_err_free(e);
		e = NULL;
		if (sbx_process_get(ctx, ref, pid, &rec, &e) < 0)
			return err_set(err, sbx_err_code(e), e->errnum, "start the code interpreter: %s",
				       sbx_err_message(e));
		if (streq(json_str(rec, "state") ?: "", "exited")) {
			/* Lost a race to another starter whose bridge now listens? */
			if (sbx_env_port_connect(ctx, ref, CODE_BRIDGE_PORT, 0, ret_fd, NULL) == 0)
				return 0;
			_cleanup_free_ char *why = stderr_last_line(ctx, ref, pid, rec);
			if (why)
				return err_set(err, SBX_E_UNAVAILABLE, EHOSTDOWN, NEEDS ": %s", why);
			return err_set(err, SBX_E_UNAVAILABLE, EHOSTDOWN,
				       NEEDS ": the bridge exited (status %lld) without saying why",
				       (long long)json_int(rec, "exit_code", -1));
		}
		if (clock_ms(CLOCK_MONOTONIC) >= end) {
			_cleanup_json_ json_t *killed = NULL;
			(void)sbx_process_kill(ctx, ref, pid, SIGKILL, &killed, NULL);
			return err_set(err, SBX_E_UNAVAILABLE, ETIMEDOUT,
				       "the code interpreter did not start within %d s",
				       CODE_START_TIMEOUT_MS / 1000);
		}
		sleep_ms(START_POLL_MS);
	}
}

/* A connection to the bridge; 1 with *ret_fd = -1 when none listens and
 * !start. */
static int bridge_connect(sbx_ctx *ctx, const char *ref, bool start, int *ret_fd, sbx_err **err)
{
	_cleanup_err_ sbx_err *e = NULL;
	if (sbx_env_port_connect(ctx, ref, CODE_BRIDGE_PORT, 0, ret_fd, &e) == 0)
		return 0;
	if (!nothing_listens(e))
		return err_set(err, sbx_err_code(e), e->errnum, "reach the code interpreter: %s",
			       sbx_err_message(e));
	if (!start) {
		*ret_fd = -1;
		return 1;
	}
	return bridge_start(ctx, ref, ret_fd, err);
}

static int send_all(int fd, const char *p, size_t n, sbx_err **err)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return err_errno(err, "send to the code interpreter");
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

typedef struct body_relay {
	code_call *c;
	const http1_parser *p;
	bool stopped;
} body_relay;

/* The status is set before the first body bytes, for sinks that read it. */
static int relay_body(void *ud, const char *data, size_t len)
{
	body_relay *b = ud;
	b->c->status = b->p->status;
	if (b->c->on_body && b->c->on_body(b->c->ud, data, len) < 0) {
		b->stopped = true;
		return -1;
	}
	return 0;
}

int code_call_run(sbx_ctx *ctx, const char *ref, code_call *c, sbx_err **err)
{
	c->status = 0;
	c->stopped = c->not_running = c->cancelled = false;
	_cleanup_free_ char *body = c->body ? json_dumps(c->body, JSON_COMPACT) : NULL;
	if (c->body && !body)
		return err_oom(err);
	size_t blen = body ? strlen(body) : 0;
	if (blen > CODE_REQUEST_MAX)
		return err_set(err, SBX_E_LIMIT_EXCEEDED, E2BIG,
			       "the request is over %d bytes (the code is too large)", CODE_REQUEST_MAX);
	_cleanup_close_ int fd = -1;
	int r = bridge_connect(ctx, ref, c->start, &fd, err);
	if (r < 0)
		return r;
	if (r > 0) {
		c->not_running = true;
		return 0;
	}
	_cleanup_strbuf_ strbuf head = {0};
	strbuf_addf(&head,
		    "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nAccept: application/json, "
		    "application/x-ndjson\r\n",
		    c->method, c->path);
	if (body)
		strbuf_lit(&head, "Content-Type: application/json\r\n");
	strbuf_addf(&head, "Content-Length: %zu\r\n\r\n", blen);
	if (body) /* one write: the bridge wakes once */
		strbuf_add(&head, body, blen);
	if (head.oom)
		return err_oom(err);
	if (send_all(fd, head.p, head.len, err) < 0)
		return -1;

	http1_parser p;
	http1_init(&p);
	body_relay relay = {.c = c, .p = &p};
	int64_t end = c->timeout_ms > 0 ? clock_ms(CLOCK_MONOTONIC) + c->timeout_ms : 0;
	char buf[64 << 10];
	for (;;) {
		int wait = -1;
		if (end) {
			int64_t left = end - clock_ms(CLOCK_MONOTONIC);
			if (left <= 0)
				return err_set(err, SBX_E_UNAVAILABLE, ETIMEDOUT,
					       "the code interpreter did not answer %s %s within %lld ms",
					       c->method, c->path, (long long)c->timeout_ms);
			wait = left > INT32_MAX ? INT32_MAX : (int)left;
		}
		struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = c->cancel_fd, .events = POLLIN}};
		int n = poll(pf, c->cancellable ? 2 : 1, wait);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return err_errno(err, "wait for the code interpreter");
		if (n == 0)
			continue; /* the deadline check above reports it */
		if (c->cancellable && pf[1].revents) {
			c->status = p.status;
			c->cancelled = true;
			return 0; /* the connection closes here: the bridge interrupts the cell */
		}
		if (!pf[0].revents)
			continue;
		ssize_t got = read(fd, buf, sizeof(buf));
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return err_errno(err, "read from the code interpreter");
		r = got == 0 ? http1_eof(&p) : http1_feed(&p, buf, (size_t)got, relay_body, &relay, NULL);
		if (r == HTTP1_ERROR && relay.stopped) {
			c->status = p.status;
			c->stopped = true;
			return 0; /* the connection closes here: the bridge sees its client leave */
		}
		if (r == HTTP1_ERROR)
			return err_set(err, SBX_E_INTERNAL, EPROTO,
				       "the code interpreter's answer to %s %s: %s", c->method, c->path,
				       p.error);
		if (r == HTTP1_DONE) {
			c->status = p.status;
			return 0;
		}
	}
}

int code_bridge_prepare(sbx_ctx *ctx, const char *ref, sbx_err **err)
{
	_cleanup_close_ int fd = -1;
	return bridge_connect(ctx, ref, true, &fd, err);
}

bool code_bridge_ready(sbx_ctx *ctx, const char *ref)
{
	code_call c = {.method = "GET", .path = "/ready", .timeout_ms = CODE_READY_TIMEOUT_MS};
	return code_call_run(ctx, ref, &c, NULL) == 0 && !c.not_running && c.status == 200;
}
