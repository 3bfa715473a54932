/* Content digest of a host directory tree (or file): see tree_digest.c. */
#pragma once
#include <stdint.h>

#include "store/digest.h"
#include "util/err.h"

int trace_tree_digest(const char *path, char ret[STORE_DIGEST_SIZE], uint64_t *ret_entries, sbx_err **err);
