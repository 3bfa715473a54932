/* vDSO symbol lookup. The image comes from another process and is treated as
 * untrusted: every offset and count is checked against the buffer. Section
 * headers are used when present (the kernel's vDSO has them); otherwise the
 * dynamic segment (DT_SYMTAB/DT_STRTAB/DT_HASH). */
#include "trace/vdso.h"

#include <elf.h>
#include <errno.h>
#include <string.h>

#define VDSO_MAX_IMAGE (1u << 20)

static int in_bounds(size_t len, uint64_t off, uint64_t n)
{
	return off <= len && n <= len - off;
}

size_t vdso_image_size(const void *hdr, size_t len)
{
	Elf64_Ehdr eh;
	if (len < sizeof(eh))
		return 0;
	memcpy(&eh, hdr, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64)
		return 0;
#if defined(__x86_64__)
	if (eh.e_machine != EM_X86_64)
		return 0;
#elif defined(__aarch64__)
	if (eh.e_machine != EM_AARCH64)
		return 0;
#endif
	uint64_t end = sizeof(eh);
	if (eh.e_shoff && eh.e_shentsize == sizeof(Elf64_Shdr))
		end = eh.e_shoff + (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr);
	if (eh.e_phoff && eh.e_phentsize == sizeof(Elf64_Phdr)) {
		uint64_t pe = eh.e_phoff + (uint64_t)eh.e_phnum * sizeof(Elf64_Phdr);
		end = pe > end ? pe : end;
	}
	return end > VDSO_MAX_IMAGE ? 0 : (size_t)end;
}

typedef struct symtab {
	uint64_t sym_off, n_syms, str_off, str_len;
} symtab;

static int load_bias(const uint8_t *img, size_t len, const Elf64_Ehdr *eh, uint64_t *bias)
{
	if (!eh->e_phoff || eh->e_phentsize != sizeof(Elf64_Phdr) ||
	    !in_bounds(len, eh->e_phoff, (uint64_t)eh->e_phnum * sizeof(Elf64_Phdr)))
		return -EINVAL;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, img + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type == PT_LOAD) {
			*bias = ph.p_vaddr - ph.p_offset;
			return 0;
		}
	}
	return -EINVAL;
}

static int from_sections(const uint8_t *img, size_t len, const Elf64_Ehdr *eh, symtab *st)
{
	if (!eh->e_shoff || eh->e_shentsize != sizeof(Elf64_Shdr) ||
	    !in_bounds(len, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr)))
		return -ENOENT;
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		Elf64_Shdr sh, str;
		memcpy(&sh, img + eh->e_shoff + i * sizeof(sh), sizeof(sh));
		if (sh.sh_type != SHT_DYNSYM)
			continue;
		if (sh.sh_link >= eh->e_shnum || sh.sh_entsize != sizeof(Elf64_Sym))
			return -EINVAL;
		memcpy(&str, img + eh->e_shoff + sh.sh_link * sizeof(str), sizeof(str));
		if (!in_bounds(len, sh.sh_offset, sh.sh_size) || !in_bounds(len, str.sh_offset, str.sh_size))
			return -EINVAL;
		*st = (symtab){sh.sh_offset, sh.sh_size / sizeof(Elf64_Sym), str.sh_offset, str.sh_size};
		return 0;
	}
	return -ENOENT;
}

static int from_dynamic(const uint8_t *img, size_t len, const Elf64_Ehdr *eh, uint64_t bias, symtab *st)
{
	uint64_t symtab_va = 0, strtab_va = 0, strsz = 0, hash_va = 0;
	for (unsigned i = 0; i < eh->e_phnum; i++) {
		Elf64_Phdr ph;
		memcpy(&ph, img + eh->e_phoff + i * sizeof(ph), sizeof(ph));
		if (ph.p_type != PT_DYNAMIC)
			continue;
		if (!in_bounds(len, ph.p_offset, ph.p_filesz))
			return -EINVAL;
		for (uint64_t o = 0; o + sizeof(Elf64_Dyn) <= ph.p_filesz; o += sizeof(Elf64_Dyn)) {
			Elf64_Dyn d;
			memcpy(&d, img + ph.p_offset + o, sizeof(d));
			if (d.d_tag == DT_NULL)
				break;
			if (d.d_tag == DT_SYMTAB)
				symtab_va = d.d_un.d_ptr;
			else if (d.d_tag == DT_STRTAB)
				strtab_va = d.d_un.d_ptr;
			else if (d.d_tag == DT_STRSZ)
				strsz = d.d_un.d_val;
			else if (d.d_tag == DT_HASH)
				hash_va = d.d_un.d_ptr;
		}
	}
	if (!symtab_va || !strtab_va || !hash_va)
		return -ENOENT;
	uint64_t hash_off = hash_va - bias;
	uint32_t nchain;
	if (!in_bounds(len, hash_off, 8))
		return -EINVAL;
	memcpy(&nchain, img + hash_off + 4,
	       sizeof(nchain)); /* DT_HASH: nbucket, nchain = number of symbols */
	*st = (symtab){symtab_va - bias, nchain, strtab_va - bias, strsz};
	if (!in_bounds(len, st->sym_off, st->n_syms * sizeof(Elf64_Sym)) ||
	    !in_bounds(len, st->str_off, strsz))
		return -EINVAL;
	return 0;
}

int vdso_lookup(const void *image, size_t len, const char *name, uint64_t *ret_off, uint64_t *ret_size)
{
	const uint8_t *img = image;
	Elf64_Ehdr eh;
	uint64_t bias;
	symtab st;
	if (vdso_image_size(img, len) == 0)
		return -EINVAL;
	memcpy(&eh, img, sizeof(eh));
	int r = load_bias(img, len, &eh, &bias);
	if (r < 0)
		return r;
	r = from_sections(img, len, &eh, &st);
	if (r == -ENOENT)
		r = from_dynamic(img, len, &eh, bias, &st);
	if (r < 0)
		return r;
	size_t nlen = strlen(name);
	for (uint64_t i = 1; i < st.n_syms; i++) {
		Elf64_Sym s;
		memcpy(&s, img + st.sym_off + i * sizeof(s), sizeof(s));
		if (s.st_shndx == SHN_UNDEF || s.st_name >= st.str_len || st.str_len - s.st_name < nlen + 1)
			continue;
		int type = ELF64_ST_TYPE(s.st_info);
		if (type != STT_FUNC && type != STT_NOTYPE)
			continue;
		if (memcmp(img + st.str_off + s.st_name, name, nlen + 1) != 0)
			continue;
		uint64_t off = s.st_value - bias;
		if (!in_bounds(len, off, s.st_size ? s.st_size : 1))
			return -EINVAL;
		*ret_off = off;
		*ret_size = s.st_size;
		return 0;
	}
	return -ENOENT;
}

void vdso_stub(int nr, uint8_t out[VDSO_STUB_LEN])
{
	out[0] = 0xb8; /* mov eax, imm32 (zero-extends into rax) */
	out[1] = (uint8_t)nr;
	out[2] = (uint8_t)(nr >> 8);
	out[3] = (uint8_t)(nr >> 16);
	out[4] = (uint8_t)(nr >> 24);
	out[5] = 0x0f; /* syscall */
	out[6] = 0x05;
	out[7] = 0xc3; /* ret */
}
