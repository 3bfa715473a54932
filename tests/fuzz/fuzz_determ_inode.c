/* libFuzzer target: the getdents rewrite of the determinism engine
 * (src/trace/determ_inode.h), the input as a kernel's getdents64 result
 * (the engine reads it from the tracee's memory, so it is the program's to
 * shape). The walks must stay inside the buffer, touch only d_ino, map one
 * real number to one virtual number, and leave no entry unnumbered. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "trace/determ_inode.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1), *orig = malloc(size ? size : 1);
	if (!buf || !orig)
		abort();
	memcpy(buf, data, size);
	memcpy(orig, data, size);
	determ_inomap m = {0};
	uint64_t out[64];
	if (size && (data[0] & 1)) { /* numbered by name first, as the engine does for a new directory */
		determ_dirents_number(&m, 7, buf, size);
		if (determ_dirents_have_new(&m, 7, buf, size))
			abort();
	}
	size_t n = determ_dirents_map(&m, 7, buf, size, out, 64);
	size_t off = 0;
	for (size_t i = 0; i < n; i++) {
		uint16_t reclen;
		uint64_t real, virt;
		memcpy(&reclen, orig + off + 16, sizeof(reclen));
		memcpy(&real, orig + off, sizeof(real));
		memcpy(&virt, buf + off, sizeof(virt));
		if (memcmp(buf + off + 8, orig + off + 8, reclen - 8) != 0) /* only d_ino changes */
			abort();
		if ((real == 0) != (virt == 0) || virt != determ_ino_map(&m, 7, real))
			abort();
		if (i < 64 && out[i] != virt)
			abort();
		off += reclen;
	}
	if (off > size || memcmp(buf + off, orig + off, size - off) != 0)
		abort();
	determ_inomap_free(&m);
	free(buf);
	free(orig);
	return 0;
}
