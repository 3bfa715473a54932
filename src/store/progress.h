/* Progress of long store operations (snapshot, export, import, gc), for a
 * front end to show. The store's loops report what they did (bytes, files);
 * the API sets a sink around an operation. One sink per thread: operations
 * in other threads (the MCP server's) are not mixed up. With no sink set, a
 * report is one branch. */
#pragma once
#include <stdint.h>

#include "sbx.h"

/* Starts an operation on this thread; totals are 0 when unknown. */
void store_progress_begin(sbx_progress_fn fn, void *ud, const char *op, uint64_t bytes_total,
			  uint64_t files_total);
void store_progress_add(uint64_t bytes, uint64_t files);
/* Raises the totals (work discovered as it goes). */
void store_progress_total(uint64_t bytes, uint64_t files);
/* From the canonical tar writer: counted only by operations whose work is
 * writing tars (snapshot, gc), not by import (which counts blob bytes read)
 * or export (which counts bytes compressed) where the writer is a step. */
void store_progress_tar(uint64_t bytes, uint64_t files);
/* Reports the end (done = true) and clears the sink. */
void store_progress_end(void);
