/* Finding functions in the vDSO image, so the determinism engine can replace
 * them with stubs that enter the kernel (where its seccomp filter sees the
 * call). Pure: the caller reads the image out of the tracee. */
#pragma once
#include <stddef.h>
#include <stdint.h>

/* Bytes of the image to read to parse it, judging by its first bytes (an
 * ELF64 header): up to the end of the section headers, which the kernel's
 * linker script places last. 0 if this is not an ELF64 image for this
 * machine or the size is implausible (over 1 MiB). */
size_t vdso_image_size(const void *hdr, size_t len);
/* The offset from the image start and the size of the dynamic symbol `name`
 * (st_value is relative to the image's load address). 0, or -ENOENT when
 * absent, -EINVAL when the image is malformed; never reads out of bounds. */
int vdso_lookup(const void *img, size_t len, const char *name, uint64_t *ret_off, uint64_t *ret_size);

/* x86_64 `mov eax, nr; syscall; ret`: the vDSO functions take their
 * arguments in the registers the syscalls do (rdi, rsi, rdx), and rcx/r11,
 * which syscall clobbers, are caller-saved in the C ABI. */
#define VDSO_STUB_LEN 8
void vdso_stub(int nr, uint8_t out[VDSO_STUB_LEN]);
