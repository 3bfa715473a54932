/* libFuzzer target: POSIX ACL xattr values (src/store/acl.c), as an
 * imported layer's SCHILY.xattr.system.posix_acl_* records give them. An
 * accepted ACL must shift back to what it was, and stay valid. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "store/acl.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size > 65536)
		return 0;
	uint8_t *v = malloc(size ? size : 1), *w = malloc(size ? size : 1);
	if (!v || !w) {
		free(v);
		free(w);
		return 0;
	}
	memcpy(v, data, size);
	store_idmap ids = {100000, 200000, 65536};
	store_acl_error e;
	int r = store_acl_shift(v, size, &ids, STORE_ACL_TO_DISK, &e);
	if (r == -EINVAL && !e.why)
		abort();
	if (r == 0) {
		memcpy(w, v, size);
		if (store_acl_shift(w, size, &ids, STORE_ACL_FROM_DISK, &e) != 0)
			abort();
		if (store_acl_shift(w, size, &ids, STORE_ACL_TO_DISK, &e) != 0 || memcmp(v, w, size) != 0)
			abort();
	} else if (r != -EINVAL && r != -ERANGE)
		abort();
	free(v);
	free(w);
	return 0;
}
