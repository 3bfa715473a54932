/* sbx_env_port_connect: a connection to a port of the environment's own
 * loopback. Init hands out a fresh TCP socket made in the environment's
 * network namespace ("file" action "socket", src/runtime/init.c) and the
 * connect happens here, to 127.0.0.1 only. The descriptor comes from inside
 * the environment, so it is checked before use: a stream socket of AF_INET,
 * TCP, neither bound nor connected (anything else init could be made to pass
 * is refused, never used). */
#include <errno.h>
#include <string.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api/api.h"
#include "runtime/ctl_proto.h"
#include "util/clock.h"
#include "util/fd.h"
#include "util/json.h"

#define PORT_CONNECT_TIMEOUT_MS 5000

_public_ int sbx_env_port_connect(sbx_ctx *ctx, const char *ref, int port, int timeout_ms, int *ret_fd,
				  sbx_err **err)
{
	if (port < 1 || port > 65535)
		return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "port %d is not in 1-65535", port);
	if (timeout_ms <= 0)
		timeout_ms = PORT_CONNECT_TIMEOUT_MS;
	_cleanup_json_ json_t *req = json_pack("{s:s,s:s}", CTL_F_OP, CTL_OP_FILE, "action", "socket"),
			      *m = NULL;
	if (!req)
		return err_oom(err);
	_cleanup_close_ int fd = -1;
	if (api_file_call(ctx, ref, req, &m, &fd, 1, err) < 0)
		return err_wrap(err, "connect to port %d", port);
	if (!fd_is_fresh_tcp(fd))
		return err_set(
		    err, SBX_E_INTERNAL, EPROTO,
		    "connect to port %d: the environment passed something other than a fresh TCP socket",
		    port);
	if (fd_set_nonblock(fd, 1) < 0)
		return err_errno(err, "connect to port %d", port);
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (errno != EINPROGRESS)
			return err_set(err, errno == ECONNREFUSED ? SBX_E_UNAVAILABLE : SBX_E_INTERNAL, errno,
				       "connect to port %d: %s", port,
				       errno == ECONNREFUSED ? "nothing listens there" : strerror(errno));
		int64_t end = clock_ms(CLOCK_MONOTONIC) + timeout_ms;
		for (;;) {
			struct pollfd p = {.fd = fd, .events = POLLOUT};
			int64_t left = end - clock_ms(CLOCK_MONOTONIC);
			int r = left > 0 ? poll(&p, 1, (int)left) : 0;
			if (r < 0 && errno == EINTR)
				continue;
			if (r < 0)
				return err_errno(err, "connect to port %d", port);
			if (r == 0)
				return err_set(err, SBX_E_UNAVAILABLE, ETIMEDOUT,
					       "connect to port %d: no answer within %d ms", port,
					       timeout_ms);
			break;
		}
		int e = fd_sock_opt(fd, SO_ERROR);
		if (e != 0)
			return err_set(err, e == ECONNREFUSED ? SBX_E_UNAVAILABLE : SBX_E_INTERNAL,
				       e > 0 ? e : EIO, "connect to port %d: %s", port,
				       e == ECONNREFUSED ? "nothing listens there"
							 : strerror(e > 0 ? e : EIO));
	}
	if (fd_set_nonblock(fd, 0) < 0)
		return err_errno(err, "connect to port %d", port);
	*ret_fd = TAKE_FD(fd);
	return 0;
}

/* Published ports (docs/ports.md): what the record holds; the supervisor
 * bound them (src/runtime/sup_ports.c) and the create recorded the host
 * ports it chose. */
_public_ int sbx_env_ports(sbx_ctx *ctx, const char *ref, json_t **ret, sbx_err **err)
{
	_cleanup_free_ char *id = NULL;
	_cleanup_env_record_ env_record r = {.uid_slot = -1};
	if (env_record_load(ctx, ref, &id, &r, err) < 0)
		return -1;
	json_t *ports = json_object_get(r.json, "ports");
	json_t *j = json_pack("{s:s,s:o}", "environment_id", id, "ports",
			      json_is_array(ports) ? json_deep_copy(ports) : json_array());
	if (!j)
		return err_oom(err);
	*ret = j;
	return 0;
}
