/* Debug logging only: the library never logs above debug (STYLE.md #4).
 * Enabled with SBX_DEBUG=1; goes to stderr (or the supervisor's log file). */
#pragma once
#include <stdbool.h>
#include "util/macro.h"

extern bool log_debug_enabled;
void log_init(void);
void log_debug_impl(const char *fmt, ...) _printf_(1, 2);
#define log_debug(...)                                                                                       \
	do {                                                                                                 \
		if (log_debug_enabled)                                                                       \
			log_debug_impl(__VA_ARGS__);                                                         \
	} while (0)
