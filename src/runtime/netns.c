/* The environment's network namespace: only loopback, brought up. */
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include "runtime/netns.h"

int netns_loopback_up(sbx_err **err)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return err_errno(err, "socket");
	struct ifreq ifr = {0};
	strncpy(ifr.ifr_name, "lo", IFNAMSIZ - 1);
	if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0)
		return err_errno(err, "get loopback flags");
	ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
	if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0)
		return err_errno(err, "bring loopback up");
	return 0;
}

int netns_proxy_socket(sbx_err **err)
{
	_cleanup_close_ int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return err_errno(err, "egress proxy socket");
	int one = 1;
	(void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	struct sockaddr_in a = {.sin_family = AF_INET,
				.sin_port = htons(NETNS_PROXY_PORT),
				.sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (bind(s, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(s, 128) < 0)
		return err_errno(err, "egress proxy socket: bind 127.0.0.1:%d", NETNS_PROXY_PORT);
	return TAKE_FD(s);
}
