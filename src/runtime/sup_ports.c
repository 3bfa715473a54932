/* Published ports (docs/ports.md): the supervisor's TCP listeners on the
 * host, one per mapping, and the relay of each accepted connection into the
 * environment's own loopback. The supervisor binds them before anything
 * else of the environment exists (sup_ports_bind), so the listeners live
 * exactly as long as the environment's supervisor; they are served by a
 * thread of their own (the acceptor) and a thread per connection, at most
 * SUP_PORTS_CONNS at once (a connection beyond that is closed at accept).
 *
 * A connection's way in is the one sbx_env_port_connect takes: the
 * connection's thread asks the supervisor's own control socket for init's
 * "socket" file action (a fresh TCP socket made in the environment's network
 * namespace, checked before use), connects it to 127.0.0.1:PORT, and relays
 * bytes both ways (util/relay.h). Going through the control socket, a
 * connection meets what any client meets: the init of the moment (a restore
 * in place replaces it), and a paused environment refuses it (no_auto_resume:
 * traffic from outside does not undo a pause; the connection is closed).
 *
 * Threads: the acceptor and the connections read s->c (immutable) and this
 * file's state (under its mutex); nothing of the loop's. The stop sets
 * stopping, shuts down every descriptor a connection waits on, and joins
 * every thread: nothing is left behind. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "runtime/ctl_proto.h"
#include "runtime/sup_internal.h"
#include "util/clock.h"
#include "util/fd.h"
#include "util/json.h"
#include "util/log.h"
#include "util/relay.h"

#define SUP_PORTS_CONNS 256
#define SUP_PORTS_CONNECT_MS 5000

typedef struct port_conn {
	pthread_t thread;
	bool used, done;
	int client, ctl, inner; /* shut down by the stop; -1 when not open */
	int port;		/* the inner port */
	struct sup_ports *owner;
} port_conn;

typedef struct sup_ports {
	supervisor *s;
	pthread_mutex_t lock;
	bool stopping;
	int stop_fd; /* eventfd: the acceptor and connects in progress end */
	pthread_t acceptor;
	bool running;
	port_conn conns[SUP_PORTS_CONNS];
} sup_ports;

static int bind_one(env_port *p, sbx_err **err)
{
	bool v6 = strchr(p->host_ip, ':') != NULL;
	struct sockaddr_storage ss = {0};
	socklen_t len;
	if (v6) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
		a->sin6_family = AF_INET6;
		a->sin6_port = htons((uint16_t)p->host_port);
		if (inet_pton(AF_INET6, p->host_ip, &a->sin6_addr) != 1)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' is not an IPv6 address",
				       p->host_ip);
		len = sizeof(*a);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;
		a->sin_family = AF_INET;
		a->sin_port = htons((uint16_t)p->host_port);
		if (inet_pton(AF_INET, p->host_ip, &a->sin_addr) != 1)
			return err_set(err, SBX_E_INVALID_ARGUMENT, EINVAL, "'%s' is not an IPv4 address",
				       p->host_ip);
		len = sizeof(*a);
	}
	_cleanup_close_ int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	int one = 1;
	if (fd < 0)
		return err_errno(err, "socket");
	/* SO_REUSEADDR: a port whose last connections are in TIME_WAIT binds
	 * again (a restart); it never shares a port another socket listens on. */
	(void)setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (v6)
		(void)setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) < 0) {
		int e = errno;
		return err_set(err, e == EADDRINUSE ? SBX_E_CONFLICT : SBX_E_INVALID_ARGUMENT, e,
			       "bind %s%s%s:%d: %s", v6 ? "[" : "", p->host_ip, v6 ? "]" : "", p->host_port,
			       e == EADDRINUSE	    ? "the port is in use"
			       : e == EACCES	    ? "permission denied (ports below 1024 need root)"
			       : e == EADDRNOTAVAIL ? "no such address on this host"
						    : strerror(e));
	}
	if (listen(fd, 128) < 0)
		return err_errno(err, "listen on %s:%d", p->host_ip, p->host_port);
	socklen_t n = sizeof(ss);
	if (getsockname(fd, (struct sockaddr *)&ss, &n) < 0)
		return err_errno(err, "getsockname");
	p->host_port =
	    ntohs(v6 ? ((struct sockaddr_in6 *)&ss)->sin6_port : ((struct sockaddr_in *)&ss)->sin_port);
	p->fd = TAKE_FD(fd);
	return 0;
}

int sup_ports_bind(supervisor *s, sbx_err **err)
{
	env_config *c = s->c;
	for (size_t i = 0; i < c->n_ports; i++) {
		env_port *p = &c->ports[i];
		_cleanup_err_ sbx_err *e = NULL;
		if (bind_one(p, &e) == 0)
			continue;
		if (!c->ports_lenient) {
			*err = TAKE_PTR(e);
			return err_wrap(err, "publish port %d", p->port);
		}
		/* A restart (wake, restore with a new supervisor): the
		 * environment comes back all the same, without this port. */
		sup_add_warning(s, "publish port %d: %s (not published until the environment restarts)",
				p->port, sbx_err_message(e));
	}
	return 0;
}

json_t *sup_ports_json(const supervisor *s)
{
	json_t *a = json_array();
	for (size_t i = 0; a && i < s->c->n_ports; i++) {
		const env_port *p = &s->c->ports[i];
		json_array_append_new(a, json_pack("{s:i,s:s,s:s,s:i,s:b}", "port", p->port, "protocol",
						   "tcp", "host_ip", p->host_ip, "host_port", p->host_port,
						   "bound", p->fd >= 0));
	}
	return a;
}

/* Records fd in *slot unless the stop began (then fd is closed): false
 * when stopping. */
static bool conn_hold(port_conn *pc, int *slot, int fd)
{
	sup_ports *sp = pc->owner;
	pthread_mutex_lock(&sp->lock);
	bool ok = !sp->stopping;
	if (ok)
		*slot = fd;
	pthread_mutex_unlock(&sp->lock);
	if (!ok)
		safe_close(fd);
	return ok;
}

static void conn_drop(port_conn *pc, int *slot)
{
	pthread_mutex_lock(&pc->owner->lock);
	int fd = *slot;
	*slot = -1;
	pthread_mutex_unlock(&pc->owner->lock);
	safe_close(fd);
}

/* A fresh TCP socket of the environment's network namespace: init's
 * "socket" file action, asked through the control socket like any client
 * (sbx_env_port_connect); -1 when refused (paused, restoring, stopping). */
static int conn_inner_socket(port_conn *pc)
{
	const supervisor *s = pc->owner->s;
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/ctl.sock", s->c->run_dir);
	int ctl = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (ctl < 0 || !conn_hold(pc, &pc->ctl, ctl))
		return -1;
	if (RETRY_EINTR(connect(ctl, (struct sockaddr *)&sa, sizeof(sa))) < 0) {
		conn_drop(pc, &pc->ctl);
		return -1;
	}
	_cleanup_json_ json_t *req = json_pack("{s:s,s:s,s:b}", CTL_F_OP, CTL_OP_FILE, "action", "socket",
					       "no_auto_resume", 1),
			      *m = NULL;
	int fds[FD_MSG_MAX_FDS];
	size_t n = FD_MSG_MAX_FDS;
	int r = req ? json_send(ctl, req, NULL, 0) : -ENOMEM;
	if (r == 0)
		r = json_recv(ctl, &m, fds, &n);
	conn_drop(pc, &pc->ctl);
	if (r <= 0)
		return -1;
	int fd = n > 0 ? fds[0] : -1;
	for (size_t i = 1; i < n; i++)
		safe_close(fds[i]);
	if (fd >= 0 && (!json_bool(m, CTL_F_OK, false) || !fd_is_fresh_tcp(fd))) {
		log_debug("publish port %d: no socket from the environment", pc->port);
		fd = safe_close(fd);
	}
	return fd;
}

/* Connects inner to 127.0.0.1:port within SUP_PORTS_CONNECT_MS (the stop
 * ends the wait); 0 or -1. */
static int conn_connect(port_conn *pc, int inner)
{
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons((uint16_t)pc->port),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (fd_set_nonblock(inner, 1) < 0)
		return -1;
	if (connect(inner, (struct sockaddr *)&a, sizeof(a)) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	int64_t end = clock_ms(CLOCK_MONOTONIC) + SUP_PORTS_CONNECT_MS;
	for (;;) {
		struct pollfd p[2] = {{.fd = inner, .events = POLLOUT},
				      {.fd = pc->owner->stop_fd, .events = POLLIN}};
		int64_t left = end - clock_ms(CLOCK_MONOTONIC);
		int r = left > 0 ? poll(p, 2, (int)left) : 0;
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || p[1].revents)
			return -1;
		break;
	}
	return fd_sock_opt(inner, SO_ERROR) == 0 ? 0 : -1;
}

static void *conn_main(void *arg)
{
	port_conn *pc = arg;
	int inner = conn_inner_socket(pc);
	if (inner >= 0 && conn_hold(pc, &pc->inner, inner) && conn_connect(pc, inner) == 0)
		(void)relay_run(pc->client, inner, NULL, 0, NULL, 0);
	else
		log_debug("publish port %d: could not reach it inside; connection closed", pc->port);
	conn_drop(pc, &pc->inner);
	conn_drop(pc, &pc->client);
	pthread_mutex_lock(&pc->owner->lock);
	pc->done = true;
	pthread_mutex_unlock(&pc->owner->lock);
	return NULL;
}

/* A free connection slot (finished threads joined first), or NULL when
 * SUP_PORTS_CONNS are open. Called by the acceptor only. */
static port_conn *conn_slot(sup_ports *sp)
{
	port_conn *free_pc = NULL;
	for (size_t i = 0; i < SUP_PORTS_CONNS; i++) {
		port_conn *pc = &sp->conns[i];
		pthread_mutex_lock(&sp->lock);
		bool done = pc->used && pc->done;
		pthread_mutex_unlock(&sp->lock);
		if (done) {
			pthread_join(pc->thread, NULL);
			pc->used = false;
		}
		if (!pc->used && !free_pc)
			free_pc = pc;
	}
	return free_pc;
}

static void accept_one(sup_ports *sp, const env_port *p)
{
	int fd = accept4(p->fd, NULL, NULL, SOCK_CLOEXEC);
	if (fd < 0)
		return;
	port_conn *pc = conn_slot(sp);
	if (!pc) {
		log_debug("publish port %d: %d connections open, one refused", p->port, SUP_PORTS_CONNS);
		safe_close(fd);
		return;
	}
	*pc = (port_conn){.used = true, .client = fd, .ctl = -1, .inner = -1, .port = p->port, .owner = sp};
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 256 << 10); /* the relay's buffers are on the heap */
	if (pthread_create(&pc->thread, &at, conn_main, pc) != 0) {
		pc->used = false;
		safe_close(fd);
	}
	pthread_attr_destroy(&at);
}

static void *acceptor_main(void *arg)
{
	sup_ports *sp = arg;
	env_config *c = sp->s->c;
	struct pollfd p[SBX_PUBLISH_MAX + 1];
	size_t n = 0;
	const env_port *which[SBX_PUBLISH_MAX];
	for (size_t i = 0; i < c->n_ports && n < SBX_PUBLISH_MAX; i++)
		if (c->ports[i].fd >= 0) {
			which[n] = &c->ports[i];
			p[n++] = (struct pollfd){.fd = c->ports[i].fd, .events = POLLIN};
		}
	p[n] = (struct pollfd){.fd = sp->stop_fd, .events = POLLIN};
	for (;;) {
		int r = poll(p, n + 1, -1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0 || p[n].revents)
			break;
		for (size_t i = 0; i < n; i++)
			if (p[i].revents & POLLIN)
				accept_one(sp, which[i]);
	}
	return NULL;
}

int sup_ports_start(supervisor *s, sbx_err **err)
{
	bool any = false;
	for (size_t i = 0; i < s->c->n_ports; i++)
		any = any || s->c->ports[i].fd >= 0;
	if (!any)
		return 0;
	sup_ports *sp = calloc(1, sizeof(*sp));
	if (!sp)
		return err_oom(err);
	sp->s = s;
	pthread_mutex_init(&sp->lock, NULL);
	sp->stop_fd = eventfd(0, EFD_CLOEXEC);
	if (sp->stop_fd < 0) {
		free(sp);
		return err_errno(err, "eventfd");
	}
	int r = pthread_create(&sp->acceptor, NULL, acceptor_main, sp);
	if (r != 0) {
		safe_close(sp->stop_fd);
		free(sp);
		return err_errnum(err, r, "start the published ports' thread");
	}
	sp->running = true;
	s->ports = sp;
	return 0;
}

void sup_ports_stop(supervisor *s)
{
	sup_ports *sp = s->ports;
	if (sp) {
		/* The acceptor first (no new connection), then every connection:
		 * what each waits on is shut down, so each thread ends soon. */
		uint64_t one = 1;
		(void)!write(sp->stop_fd, &one, sizeof(one));
		pthread_join(sp->acceptor, NULL);
		pthread_mutex_lock(&sp->lock);
		sp->stopping = true;
		for (size_t i = 0; i < SUP_PORTS_CONNS; i++) {
			port_conn *pc = &sp->conns[i];
			if (!pc->used)
				continue;
			const int fds[3] = {pc->client, pc->ctl, pc->inner};
			for (size_t k = 0; k < 3; k++)
				if (fds[k] >= 0)
					(void)shutdown(fds[k], SHUT_RDWR);
		}
		pthread_mutex_unlock(&sp->lock);
		for (size_t i = 0; i < SUP_PORTS_CONNS; i++)
			if (sp->conns[i].used)
				pthread_join(sp->conns[i].thread, NULL);
		safe_close(sp->stop_fd);
		pthread_mutex_destroy(&sp->lock);
		free(sp);
		s->ports = NULL;
	}
	sup_ports_close_copies(s);
}

void sup_ports_close_copies(supervisor *s)
{
	for (size_t i = 0; i < s->c->n_ports; i++)
		s->c->ports[i].fd = safe_close(s->c->ports[i].fd);
}
