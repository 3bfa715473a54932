#pragma once
#include "util/err.h"
/* Brings up `lo` in the calling process's (new) network namespace. */
int netns_loopback_up(sbx_err **err);

/* The port of the egress proxy inside environments with network allow. */
#define NETNS_PROXY_PORT 3128
/* A listening TCP socket on 127.0.0.1:NETNS_PROXY_PORT in the calling
 * process's network namespace (the environment's). */
int netns_proxy_socket(sbx_err **err);
