#pragma once
#include "util/err.h"
/* Brings up `lo` in the calling process's (new) network namespace. */
int netns_loopback_up(sbx_err **err);
