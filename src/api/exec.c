/* exec_core: run a command in a live environment and relay its stdio
 * (sbx_env_exec, on top in env.c, sends a traced run to trace.c instead).
 *
 * The client creates the pipes; the sandbox-side ends travel over the
 * control socket (SCM_RIGHTS) to the supervisor and on to init, which hands
 * them to the command. No host descriptor other than these pipes (or the
 * pty that init allocates inside) reaches the sandbox. The library relays
 * between the pipes and the caller's fds or buffers, enforcing the output
 * cap; the supervisor enforces the timeout. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "api/api.h"
#include "runtime/ctl_proto.h"
#include "build/image_config.h"
#include "runtime/startup_trace.h"
#include "runtime/user.h"
#include "util/fd.h"
#include "util/json.h"

typedef struct capture {
	char *buf;
	size_t len, cap;
	int64_t limit; /* -1 none */
	bool truncated;
} capture;

static void capture_add(capture *c, const char *p, size_t n)
{
	size_t take = n;
	if (c->limit >= 0 && c->len + take > (size_t)c->limit) {
		take = (size_t)c->limit > c->len ? (size_t)c->limit - c->len : 0;
		c->truncated = true;
	}
	if (take == 0)
		return;
	if (c->len + take + 1 > c->cap) {
		size_t nc = c->cap ? c->cap : 4096;
		while (nc < c->len + take + 1)
			nc *= 2;
		char *b = realloc(c->buf, nc);
		if (!b) {
			c->truncated = true;
			return;
		}
		c->buf = b;
		c->cap = nc;
	}
	memcpy(c->buf + c->len, p, take);
	c->len += take;
	c->buf[c->len] = 0;
}

typedef struct relay {
	const sbx_exec_opts *o;
	capture out, err;
	int64_t stream_left[3]; /* bytes still allowed to the caller's fds, -1 none */
} relay;

static void deliver(relay *r, int stream, const char *p, size_t n)
{
	const sbx_exec_opts *o = r->o;
	if (o->capture)
		capture_add(stream == SBX_STDOUT ? &r->out : &r->err, p, n);
	if (o->on_output)
		o->on_output(o->userdata, stream, p, n);
	int fd = stream == SBX_STDOUT ? o->stdout_fd : o->stderr_fd;
	if (fd >= 0 && r->stream_left[stream] != 0) {
		size_t take = n;
		if (r->stream_left[stream] > 0 && (int64_t)take > r->stream_left[stream])
			take = (size_t)r->stream_left[stream];
		if (fd_write_all(fd, p, take) < 0)
			r->stream_left[stream] = 0; /* reader gone: keep draining, stop writing */
		else if (r->stream_left[stream] > 0)
			r->stream_left[stream] -= (int64_t)take;
		if ((size_t)take < n) {
			if (stream == SBX_STDOUT)
				r->out.truncated = true;
			else
				r->err.truncated = true;
		}
	}
}

/* Moves what is available from the trace pipe to its file; false at EOF or
 * error (a write error leaves the trace short, which the record reports). */
static bool copy_trace(int from, int to)
{
	char buf[65536];
	ssize_t n = read(from, buf, sizeof(buf));
	if (n > 0)
		return fd_write_all(to, buf, (size_t)n) >= 0 || true;
	return n < 0 && (errno == EAGAIN || errno == EINTR);
}

/* Reads what is available from fd; returns false at EOF/error. */
static bool pump(relay *r, int fd, int stream)
{
	char buf[65536];
	ssize_t n = read(fd, buf, sizeof(buf));
	if (n > 0) {
		deliver(r, stream, buf, (size_t)n);
		return true;
	}
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	return false;
}

/* Reads until the pipe is empty (EAGAIN) or closed. */
static void drain(relay *r, int fd, int stream)
{
	char buf[65536];
	while (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf));
		if (n <= 0 && !(n < 0 && errno == EINTR))
			return;
		if (n > 0)
			deliver(r, stream, buf, (size_t)n);
	}
}

static void fill_exit(sbx_exec_result *res, const json_t *m)
{
	int st = (int)json_int(m, CTL_F_STATUS, 0);
	res->timed_out = json_bool(m, "timed_out", false);
	res->timeout_ms = json_int(m, "timeout_ms", 0);
	res->oom_killed = json_bool(m, "oom", false);
	int64_t us = json_int(m, "duration_us", 0);
	res->duration_us = (double)us;
	res->duration_ms = us / 1000;
	if (WIFEXITED(st)) {
		res->exit_code = WEXITSTATUS(st);
		res->signal = 0;
	} else {
		res->exit_code = -1;
		res->signal = WIFSIGNALED(st) ? WTERMSIG(st) : 0;
	}
}

_public_ void sbx_exec_result_free(sbx_exec_result *r)
{
	if (!r)
		return;
	free(r->stdout_buf);
	free(r->stderr_buf);
	free(r->trace_id);
	r->stdout_buf = r->stderr_buf = r->trace_id = NULL;
}

_public_ json_t *sbx_exec_result_json(const sbx_exec_result *r)
{
	json_t *j =
	    json_pack("{s:o,s:s,s:s,s:b,s:b,s:b,s:I,s:b,s:o}", "exit_code",
		      r->exit_code >= 0 ? json_integer(r->exit_code) : json_null(), "stdout",
		      r->stdout_buf ? r->stdout_buf : "", "stderr", r->stderr_buf ? r->stderr_buf : "",
		      "stdout_truncated", r->stdout_truncated, "stderr_truncated", r->stderr_truncated,
		      "timed_out", r->timed_out, "duration_ms", (json_int_t)r->duration_ms, "oom_killed",
		      r->oom_killed, "trace_id", r->trace_id ? json_string(r->trace_id) : json_null());
	if (!j) {
		/* Output that is not valid UTF-8: jansson refuses it; escape it. */
		json_t *o = json_object();
		json_object_set_new(o, "exit_code",
				    r->exit_code >= 0 ? json_integer(r->exit_code) : json_null());
		json_object_set_new(o, "stdout",
				    json_stringn_nocheck(r->stdout_buf ? r->stdout_buf : "", r->stdout_len));
		json_object_set_new(o, "stderr",
				    json_stringn_nocheck(r->stderr_buf ? r->stderr_buf : "", r->stderr_len));
		json_object_set_new(o, "stdout_truncated", json_boolean(r->stdout_truncated));
		json_object_set_new(o, "stderr_truncated", json_boolean(r->stderr_truncated));
		json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
		json_object_set_new(o, "duration_ms", json_integer(r->duration_ms));
		json_object_set_new(o, "oom_killed", json_boolean(r->oom_killed));
		json_object_set_new(o, "trace_id", r->trace_id ? json_string(r->trace_id) : json_null());
		j = o;
	}
	if (r->signal)
		json_object_set_new(j, "signal", json_integer(r->signal));
	if (r->cancelled)
		json_object_set_new(j, "cancelled", json_true());
	return j;
}

/* Replaces bytes that are not valid UTF-8 with U+FFFD so that results can
 * always be carried as JSON strings. */
static void sanitize_utf8(capture *c)
{
	if (!c->buf)
		return;
	size_t i = 0;
	capture o = {.limit = -1};
	bool changed = false;
	while (i < c->len) {
		unsigned char b = (unsigned char)c->buf[i];
		size_t n = b < 0x80 ? 1 : (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
		bool ok = n > 0 && i + n <= c->len;
		for (size_t k = 1; ok && k < n; k++)
			ok = ((unsigned char)c->buf[i + k] >> 6) == 2;
		if (ok && n == 1 && b == 0)
			ok = false; /* NUL would cut the C string */
		if (ok) {
			capture_add(&o, c->buf + i, n);
			i += n;
		} else {
			capture_add(&o, "\xef\xbf\xbd", 3);
			i++;
			changed = true;
		}
	}
	if (changed) {
		free(c->buf);
		c->buf = o.buf;
		c->len = o.len;
	} else
		free(o.buf);
}

int exec_opts_check(const sbx_exec_opts *o, sbx_err **err)
{
	if (!o || !o->argv || !o->argv[0] || !o->argv[0][0])
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "no command given");
	for (const char *const *e = o->env; e && *e; e++)
		if (!strchr(*e, '=') || **e == '=')
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
				       "invalid environment variable '%s': expected K=V", *e);
	if (o->cwd && o->cwd[0] != '/')
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "working directory '%s' must be absolute",
			       o->cwd);
	if (o->timeout_ms < -1 || o->timeout_ms > SBX_TIMEOUT_MAX_MS)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid timeout %lld ms",
			       (long long)o->timeout_ms);
	if (o->output_bytes < -1 || o->output_bytes > SBX_OUTPUT_MAX)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "invalid output limit %lld bytes",
			       (long long)o->output_bytes);
	/* The user is resolved by init, inside; its form is checked here. */
	user_spec us;
	if (o->version >= 3 && o->user && user_spec_parse(o->user, &us, err) < 0)
		return -1;
	return 0;
}

/* One try; *retry says the request met an idle suspend unanswered and may
 * be sent again (core.h env_suspended_now): nothing of it ran, the fds it
 * sent went unused, and extra fds (x) are not resent. */
static int exec_core_try(sbx_ctx *ctx, const char *id, const sbx_exec_opts *o, exec_extra *x,
			 sbx_exec_result *ret, bool *retry, sbx_err **err)
{
	_cleanup_env_record_ env_record st = {.uid_slot = -1};
	int64_t default_cap = 10LL << 20; /* a record without one (create records the resolved cap) */
	if (env_record_read(ctx, id, &st) == 0 && st.limits.output_bytes)
		default_cap = st.limits.output_bytes;
	int64_t cap = o->output_bytes == 0 ? default_cap : o->output_bytes;

	bool no_resume = o->version >= 4 && o->no_auto_resume; /* docs/warm.md */
	/* A pool entry just taken (pool.c): on the connection that took it. */
	_cleanup_close_ int sock = ctx_taken_sock(ctx, id);
	bool may_retry = sock < 0 && !x && !no_resume;
	if (sock < 0)
		sock = env_connect_resume(ctx, id, !no_resume, err);
	if (sock < 0)
		return -1;
	_cleanup_json_ json_t *req =
	    json_pack("{s:s,s:o,s:o,s:b,s:I}", CTL_F_OP, CTL_OP_EXEC, "argv", json_from_strv(o->argv), "env",
		      json_from_strv(o->env), "tty", o->tty, "timeout_ms", (json_int_t)o->timeout_ms);
	if (!req)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL,
			       "command or environment is not valid UTF-8");
	/* No --cwd: the image's WORKDIR, if the environment has one (build/image_config.h). */
	const image_layer img = {.cwd = image_config_workdir(json_object_get(st.json, "image"))};
	const image_layer ex = {.cwd = o->cwd};
	image_merged dflt = {0};
	if (image_merge((const image_layer *const[]){&img, &ex}, 2, &dflt, err) < 0)
		return -1;
	free(dflt.env);
	if (dflt.cwd)
		json_object_set_new(req, "cwd", json_string(dflt.cwd));
	if (o->version >= 3 && o->user)
		json_object_set_new(req, "user", json_string(o->user));
	if (no_resume)
		json_object_set_new(req, "no_auto_resume", json_true());
	int in[2] = {-1, -1}, out[2] = {-1, -1}, er[2] = {-1, -1};
	relay R = {.o = o, .out = {.limit = cap}, .err = {.limit = cap}, .stream_left = {-1, -1, -1}};
	int send_fds[3 + EXEC_EXTRA_FDS];
	size_t n_send = 0;
	int r = -1;
	bool sent = false; /* the supervisor has the request */
	int master = -1;
	bool want_stdin = o->stdin_fd >= 0 || o->stdin_data;
	if (o->tty) {
		struct winsize ws;
		if (o->stdout_fd >= 0 && ioctl(o->stdout_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row) {
			json_object_set_new(req, "rows", json_integer(ws.ws_row));
			json_object_set_new(req, "cols", json_integer(ws.ws_col));
		}
	} else {
		if ((want_stdin && pipe2(in, O_CLOEXEC) < 0) || pipe2(out, O_CLOEXEC) < 0 ||
		    pipe2(er, O_CLOEXEC) < 0) {
			err_errno(err, "pipe");
			goto out;
		}
		if (want_stdin) {
			json_object_set_new(req, "stdin", json_integer((json_int_t)n_send));
			send_fds[n_send++] = in[0];
		}
		json_object_set_new(req, "stdout", json_integer((json_int_t)n_send));
		send_fds[n_send++] = out[1];
		json_object_set_new(req, "stderr", json_integer((json_int_t)n_send));
		send_fds[n_send++] = er[1];
	}
	if (x) {
		const char *k;
		json_t *v;
		json_object_foreach(x->req_fields, k, v)
		{
			json_object_set(req, k, v);
		}
		for (size_t i = 0; i < x->n_fds; i++) {
			json_object_set_new(req, x->fd_names[i], json_integer((json_int_t)n_send));
			send_fds[n_send++] = x->fds[i];
		}
	}
	r = json_send(sock, req, send_fds, n_send);
	sent = r >= 0;
	/* Our copies of the sandbox-side ends go: the pipes must see EOF when
	 * the command (or the trace engine) is done with them. */
	for (size_t i = 0; x && i < x->n_fds; i++)
		if (x->close_after_send & (1u << i))
			x->fds[i] = safe_close(x->fds[i]);
	in[0] = safe_close(in[0]);
	out[1] = safe_close(out[1]);
	er[1] = safe_close(er[1]);
	if (r < 0) {
		*retry = may_retry && (r == -EPIPE || r == -ECONNRESET) && env_suspended_now(ctx, id);
		err_errnum(err, r,
			   r == -E2BIG || r == -EMSGSIZE ? "command and environment too large"
							 : "send command");
		goto out;
	}
	r = -1;
	/* First reply: started (with the pty master) or an error. */
	{
		json_t *m = NULL;
		int fds[1];
		size_t nf = 1;
		int q = json_recv(sock, &m, fds, &nf);
		if (q <= 0) {
			*retry = may_retry && env_suspended_now(ctx, id);
			err_set(err, SBX_E_UNAVAILABLE, q ? -q : EPIPE, "environment '%s' stopped answering",
				id);
			goto out;
		}
		if (streq(json_str(m, CTL_F_EV) ?: "", CTL_EV_ERROR)) {
			api_err_from_json(m, err);
			json_decref(m);
			goto out;
		}
		if (x)
			x->started = json_incref(m);
		if (o->version >= 6 && o->on_start)
			o->on_start(o->userdata, json_int(m, CTL_F_PID, -1));
		json_decref(m);
		if (o->tty) {
			if (nf != 1) {
				err_set(err, SBX_E_INTERNAL, EPROTO, "no pty from the environment");
				goto out;
			}
			master = fds[0];
		}
	}

	if (!o->capture && cap > 0 && o->output_bytes > 0)
		R.stream_left[1] = R.stream_left[2] = cap;
	sbx_exec_result res = {.exit_code = -1};
	int rd_out = o->tty ? master : out[0], rd_err = o->tty ? -1 : er[0];
	int wr_in = o->tty ? master : in[1];
	int src_in = want_stdin ? o->stdin_fd : -1;
	const char *data = o->stdin_data;
	size_t data_left = o->stdin_data ? o->stdin_len : 0;
	char inbuf[65536];
	size_t in_len = 0, in_off = 0;
	bool in_open = o->tty ? o->stdin_fd >= 0 : want_stdin;
	bool exited = false, sock_open = true;
	if (wr_in >= 0)
		fd_set_nonblock(wr_in, 1);
	if (rd_out >= 0)
		fd_set_nonblock(rd_out, 1);
	if (rd_err >= 0)
		fd_set_nonblock(rd_err, 1);
	if (o->tty)
		src_in = o->stdin_fd;
	int rd_trace = x ? x->trace_rd : -1;
	if (rd_trace >= 0)
		fd_set_nonblock(rd_trace, 1);
	int winch = o->version >= 2 && o->tty && master >= 0 ? o->winch_fd : -1;
	int sig_fd = o->version >= 5 ? o->signal_fd : -1;
	while (!exited && (sock_open || rd_out >= 0 || rd_err >= 0)) {
		struct pollfd p[9];
		int np = 0, ip_sock = -1, ip_out = -1, ip_err = -1, ip_src = -1, ip_wr = -1, ip_cancel = -1,
		    ip_tr = -1, ip_winch = -1, ip_sig = -1;
		if (sig_fd >= 0)
			p[ip_sig = np++] = (struct pollfd){.fd = sig_fd, .events = POLLIN};
		if (winch >= 0)
			p[ip_winch = np++] = (struct pollfd){.fd = winch, .events = POLLIN};
		if (rd_trace >= 0)
			p[ip_tr = np++] = (struct pollfd){.fd = rd_trace, .events = POLLIN};
		if (sock_open)
			p[ip_sock = np++] = (struct pollfd){.fd = sock, .events = POLLIN};
		if (rd_out >= 0)
			p[ip_out = np++] = (struct pollfd){.fd = rd_out, .events = POLLIN};
		if (rd_err >= 0)
			p[ip_err = np++] = (struct pollfd){.fd = rd_err, .events = POLLIN};
		bool pending = in_off < in_len || data_left > 0;
		if (in_open && !pending && src_in >= 0)
			p[ip_src = np++] = (struct pollfd){.fd = src_in, .events = POLLIN};
		if (in_open && pending && wr_in >= 0)
			p[ip_wr = np++] = (struct pollfd){.fd = wr_in, .events = POLLOUT};
		if (o->cancel_fd >= 0 && !res.cancelled)
			p[ip_cancel = np++] = (struct pollfd){.fd = o->cancel_fd, .events = POLLIN};
		if (in_open && !pending && src_in < 0 && !o->tty) {
			/* stdin_data fully written: close so the command sees EOF. */
			in[1] = safe_close(in[1]);
			wr_in = -1;
			in_open = false;
		}
		if (poll(p, (nfds_t)np, -1) < 0) {
			if (errno == EINTR)
				continue;
			err_errno(err, "poll");
			goto out;
		}
		if (ip_tr >= 0 && p[ip_tr].revents && !copy_trace(rd_trace, x->trace_out))
			rd_trace = -1;
		if (ip_winch >= 0 && p[ip_winch].revents) {
			/* The caller's terminal changed size: the pty inside follows,
			 * and the kernel sends SIGWINCH to its foreground group. */
			char drain[64];
			if (read(winch, drain, sizeof(drain)) <= 0 && errno != EAGAIN && errno != EINTR)
				winch = -1;
			struct winsize ws;
			if (o->stdout_fd >= 0 && ioctl(o->stdout_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row)
				(void)ioctl(master, TIOCSWINSZ, &ws);
		}
		if (ip_out >= 0 && p[ip_out].revents && !pump(&R, rd_out, SBX_STDOUT)) {
			if (rd_out == master)
				master = safe_close(master);
			else
				out[0] = safe_close(out[0]);
			rd_out = -1;
			if (o->tty)
				wr_in = -1, in_open = false;
		}
		if (ip_err >= 0 && p[ip_err].revents && !pump(&R, rd_err, SBX_STDERR)) {
			er[0] = safe_close(er[0]);
			rd_err = -1;
		}
		if (ip_src >= 0 && p[ip_src].revents) {
			ssize_t n = read(src_in, inbuf, sizeof(inbuf));
			if (n > 0) {
				in_len = (size_t)n;
				in_off = 0;
			} else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
				in_open = false;
				if (!o->tty) {
					in[1] = safe_close(in[1]);
					wr_in = -1;
				} else if (master >= 0) {
					char eof = 4; /* ^D: end of input on a terminal */
					(void)!write(master, &eof, 1);
				}
			}
		}
		if (ip_wr >= 0 && p[ip_wr].revents) {
			const char *src = in_off < in_len ? inbuf + in_off : data;
			size_t len = in_off < in_len ? in_len - in_off : data_left;
			ssize_t n = write(wr_in, src, len);
			if (n > 0) {
				if (in_off < in_len)
					in_off += (size_t)n;
				else
					data += n, data_left -= (size_t)n;
			} else if (n < 0 && errno != EAGAIN && errno != EINTR) {
				/* The command closed its stdin: stop feeding it. */
				in_open = false;
				data_left = 0;
				in_len = in_off = 0;
				if (!o->tty) {
					in[1] = safe_close(in[1]);
					wr_in = -1;
				}
			}
		}
		if (ip_sig >= 0 && p[ip_sig].revents) {
			/* The caller's signals, to the command's process group. */
			unsigned char sigs[16];
			ssize_t n = read(sig_fd, sigs, sizeof(sigs));
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				sig_fd = -1;
			for (ssize_t i = 0; i < n; i++) {
				if (sigs[i] < 1 || sigs[i] >= NSIG)
					continue;
				_cleanup_json_ json_t *k =
				    json_pack("{s:s,s:i}", CTL_F_OP, CTL_OP_SIGNAL, CTL_F_SIG, (int)sigs[i]);
				(void)json_send(sock, k, NULL, 0);
			}
		}
		if (ip_cancel >= 0 && p[ip_cancel].revents) {
			res.cancelled = true;
			_cleanup_json_ json_t *k =
			    json_pack("{s:s,s:i}", CTL_F_OP, CTL_OP_SIGNAL, CTL_F_SIG, SIGKILL);
			(void)json_send(sock, k, NULL, 0);
		}
		if (ip_sock >= 0 && p[ip_sock].revents) {
			json_t *m = NULL;
			int q = json_recv(sock, &m, NULL, NULL);
			if (q <= 0) {
				sock_open = false;
				err_set(err, SBX_E_UNAVAILABLE, EPIPE,
					"environment '%s' stopped while the command ran", id);
				goto out;
			}
			const char *ev = json_str(m, CTL_F_EV) ?: "";
			if (streq(ev, CTL_EV_EXIT)) {
				fill_exit(&res, m);
				if (x)
					x->exit = json_incref(m);
				exited = true;
			} else if (streq(ev, CTL_EV_ERROR)) {
				api_err_from_json(m, err);
				json_decref(m);
				goto out;
			}
			json_decref(m);
		}
	}
	/* The command has exited: everything it wrote is in the pipes. Take
	 * what is there and stop (background children may hold them open). */
	drain(&R, rd_out, SBX_STDOUT);
	drain(&R, rd_err, SBX_STDERR);
	/* The engine's records: its write end closes when it exits, which is
	 * before the command's exit is reported. */
	while (rd_trace >= 0) {
		struct pollfd tp = {.fd = rd_trace, .events = POLLIN};
		if (poll(&tp, 1, 5000) <= 0 || !copy_trace(rd_trace, x->trace_out))
			break;
	}
	if (o->capture) {
		sanitize_utf8(&R.out);
		sanitize_utf8(&R.err);
	}
	res.stdout_buf = R.out.buf;
	res.stdout_len = R.out.len;
	res.stderr_buf = R.err.buf;
	res.stderr_len = R.err.len;
	res.stdout_truncated = R.out.truncated;
	res.stderr_truncated = R.err.truncated;
	if (!res.stdout_buf && o->capture)
		res.stdout_buf = strdup("");
	if (!res.stderr_buf && o->capture)
		res.stderr_buf = strdup("");
	*ret = res;
	r = 0;
out:
	if (x && x->keep_sock && sent)
		x->sock = TAKE_FD(sock);
	safe_close(in[0]);
	safe_close(in[1]);
	safe_close(out[0]);
	safe_close(out[1]);
	safe_close(er[0]);
	safe_close(er[1]);
	safe_close(master);
	if (r < 0) {
		free(R.out.buf);
		free(R.err.buf);
	}
	return r;
}

int exec_core(sbx_ctx *ctx, const char *id, const sbx_exec_opts *o, exec_extra *x, sbx_exec_result *ret,
	      sbx_err **err)
{
	bool retry = false;
	int r = exec_core_try(ctx, id, o, x, ret, &retry, err);
	if (r < 0 && retry) {
		startup_mark("exec: met an idle suspend, again");
		if (err) {
			sbx_err_free(*err);
			*err = NULL;
		}
		r = exec_core_try(ctx, id, o, x, ret, &retry, err);
	}
	return r;
}
