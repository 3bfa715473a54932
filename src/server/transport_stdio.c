/* MCP over stdio: newline-delimited JSON-RPC on stdin/stdout.
 *
 * The reader (this thread) splits stdin into lines and hands each to the
 * server; tool calls answer from worker threads, so every write to stdout
 * goes through one mutex and is one whole line. Nothing else is ever
 * written to stdout. A line longer than JSONRPC_MAX_MESSAGE is skipped
 * without being buffered whole, and answered with an error. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "server/jsonrpc.h"
#include "server/mcp.h"
#include "server/reaper.h"
#include "util/err.h"
#include "util/fd.h"
#include "util/macro.h"

typedef struct stdio_out {
	pthread_mutex_t lock;
	int fd;
	atomic_bool broken; /* the reader of stdout is gone */
} stdio_out;

/* Writes all of buf, however the pipe takes it: in pieces (a client that
 * drains a long line slowly), with EAGAIN (stdout may be non-blocking: the
 * descriptor is shared with whoever spawned us) waited out with poll. A
 * vanished reader is EPIPE (SIGPIPE is ignored by the CLI). Returns 0 or
 * -errno. */
static int write_fully(int fd, const char *buf, size_t len)
{
	while (len > 0) {
		ssize_t n = write(fd, buf, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			if (poll(&p, 1, -1) < 0 && errno != EINTR)
				return -errno;
			if (p.revents & (POLLERR | POLLNVAL))
				return -EPIPE;
			continue;
		}
		if (n < 0)
			return -errno;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Signals that end the server (and a broken stdout): they only poke the
 * reader. */
static int stop_pipe[2] = {-1, -1};

static void stdio_send(void *userdata, const json_t *msg)
{
	stdio_out *o = userdata;
	char *s = jsonrpc_dump(msg);
	if (!s)
		return;
	size_t len = strlen(s);
	s[len] = '\n'; /* replaces the NUL: write len + 1 bytes, then restore */
	pthread_mutex_lock(&o->lock);
	if (!atomic_load(&o->broken) && write_fully(o->fd, s, len + 1) < 0) {
		atomic_store(&o->broken, true);
		/* Nobody can get our answers: stop reading, cancel the calls. */
		(void)!write(stop_pipe[1], "x", 1);
	}
	pthread_mutex_unlock(&o->lock);
	s[len] = 0;
	free(s);
}

static bool stdio_gone(void *userdata)
{
	stdio_out *o = userdata;
	return atomic_load(&o->broken);
}

static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP};

static void on_stop_signal(int sig)
{
	int saved = errno;
	(void)!write(stop_pipe[1], "x", 1);
	errno = saved;
}

int mcp_serve_stdio(sbx_ctx *ctx, int in_fd, int out_fd, sbx_err **err)
{
	mcp_server *s = NULL;
	if (mcp_server_new(ctx, true, &s, err) < 0)
		return -1;
	if (stop_pipe[0] < 0 && pipe2(stop_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
		mcp_server_free(s);
		return err_errno(err, "pipe");
	}
	char drain[64]; /* a poke left from an earlier run in this process */
	while (read(stop_pipe[0], drain, sizeof(drain)) > 0)
		;
	/* A client that goes away must cost us EPIPE, never our life. */
	signal(SIGPIPE, SIG_IGN);
	struct sigaction sa = {.sa_handler = on_stop_signal}, old[ARRAY_SIZE(stop_signals)];
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &sa, &old[i]);

	stdio_out out = {.fd = out_fd};
	pthread_mutex_init(&out.lock, NULL);
	mcp_sink sink = {.send = stdio_send, .userdata = &out, .gone = stdio_gone};

	size_t cap = 64 * 1024, len = 0, scanned = 0;
	char *buf = malloc(cap);
	size_t skipping = 0;	/* > 0: inside an oversized line, this many bytes so far */
	json_t *skip_id = NULL; /* and the id read from its start (jsonrpc_peek_id) */
	bool stopped = false;
	while (buf && !atomic_load(&out.broken)) {
		/* out_fd with no events: poll still reports its reader gone
		 * (POLLERR on a pipe, POLLHUP on a socket). */
		struct pollfd p[3] = {{.fd = in_fd, .events = POLLIN},
				      {.fd = stop_pipe[0], .events = POLLIN},
				      {.fd = out_fd, .events = 0}};
		if (poll(p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents || (p[2].revents & (POLLERR | POLLHUP))) {
			stopped = true;
			break;
		}
		if (len + 65536 > cap && cap < JSONRPC_MAX_MESSAGE + 65536 * 2) {
			size_t ncap = cap * 2;
			char *nb = realloc(buf, ncap);
			if (!nb)
				break;
			buf = nb;
			cap = ncap;
		}
		ssize_t n = read(in_fd, buf + len, cap - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break; /* EOF (or stdin gone): finish what is in flight */
		len += (size_t)n;
		/* Hand over every complete line. */
		size_t start = 0;
		for (size_t i = scanned; i < len; i++) {
			if (buf[i] != '\n')
				continue;
			if (skipping) {
				json_t *e = jsonrpc_too_large(skipping + (i - start), skip_id);
				stdio_send(&out, e);
				json_decref(e);
				skipping = 0;
				json_decref(skip_id);
				skip_id = NULL;
			} else
				mcp_server_handle(s, buf + start, i - start, &sink);
			start = i + 1;
		}
		memmove(buf, buf + start, len - start);
		len -= start;
		scanned = len;
		/* A partial line past the limit: drop it, remember its size. */
		if (len > JSONRPC_MAX_MESSAGE) {
			if (!skipping)
				skip_id = jsonrpc_peek_id(buf, len);
			skipping += len;
			len = scanned = 0;
		}
	}
	/* A last line without a newline still counts. */
	if (buf && !stopped && len > 0 && !skipping)
		mcp_server_handle(s, buf, len, &sink);
	else if (buf && !stopped && skipping) {
		json_t *e = jsonrpc_too_large(skipping + len, skip_id);
		stdio_send(&out, e);
		json_decref(e);
	}
	json_decref(skip_id);
	free(buf);
	if (stopped || atomic_load(&out.broken))
		mcp_server_cancel_all(s);
	/* At EOF the calls in flight finish and answer, unless a stop signal
	 * comes or the reader of stdout goes (a client killed mid-call): then
	 * nobody can get their answers, so they are cancelled, not waited for
	 * (a command without a timeout may never end). */
	while (!mcp_server_wait_for(s, 250)) {
		struct pollfd p[2] = {{.fd = stop_pipe[0], .events = POLLIN}, {.fd = out_fd, .events = 0}};
		if (poll(p, 2, 0) > 0 && (p[0].revents || (p[1].revents & (POLLERR | POLLHUP)))) {
			mcp_server_cancel_all(s);
			break;
		}
	}
	mcp_server_wait(s);
	mcp_server_free(s);
	reaper_drain(); /* destroys answered but still being torn down */
	pthread_mutex_destroy(&out.lock);
	for (size_t i = 0; i < ARRAY_SIZE(stop_signals); i++)
		sigaction(stop_signals[i], &old[i], NULL);
	return 0;
}
