/* Unit tests: src/store/acl.c (POSIX ACL xattrs: validation and id shifts).
 * Writes the seeds of tests/fuzz/corpus/acl when SBX_WRITE_CORPUS=1. */
#include <endian.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "store/acl.h"
#include "unit.h"

typedef struct acl {
	uint8_t b[256];
	size_t len;
} acl;

static void acl_init(acl *a)
{
	uint32_t v = htole32(STORE_ACL_VERSION);
	memcpy(a->b, &v, 4);
	a->len = 4;
}

static void ent(acl *a, uint16_t tag, uint16_t perm, uint32_t id)
{
	uint16_t t = htole16(tag), p = htole16(perm);
	uint32_t i = htole32(id);
	memcpy(a->b + a->len, &t, 2);
	memcpy(a->b + a->len + 2, &p, 2);
	memcpy(a->b + a->len + 4, &i, 4);
	a->len += 8;
}

static uint32_t id_at(const acl *a, size_t n)
{
	uint32_t v;
	memcpy(&v, a->b + 4 + 8 * n + 4, 4);
	return le32toh(v);
}

/* user::rw- user:U:rwx group::r-- group:G:r-- mask::rwx other::r-- */
static void named(acl *a, uint32_t u, uint32_t g)
{
	acl_init(a);
	ent(a, 0x01, 6, 7);
	ent(a, 0x02, 7, u);
	ent(a, 0x04, 4, 9);
	ent(a, 0x08, 4, g);
	ent(a, 0x10, 7, 0);
	ent(a, 0x20, 4, 3);
}

TEST(acl_names)
{
	CHECK(store_acl_xattr("system.posix_acl_access"));
	CHECK(store_acl_xattr("system.posix_acl_default"));
	CHECK(!store_acl_xattr("system.posix_acl_accessx"));
	CHECK(!store_acl_xattr("user.posix_acl_access"));
	CHECK(!store_acl_xattr(NULL));
}

TEST(acl_shift_both_ways)
{
	store_idmap ids = {100000, 200000, 65536};
	acl a;
	named(&a, 101234, 200077);
	store_acl_error e;
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_FROM_DISK, &e) == 0);
	CHECK(id_at(&a, 1) == 1234 && id_at(&a, 3) == 77);
	/* unnamed entries carry no id: the kernel's (uid_t)-1 */
	CHECK(id_at(&a, 0) == STORE_ACL_UNDEFINED_ID && id_at(&a, 2) == STORE_ACL_UNDEFINED_ID &&
	      id_at(&a, 4) == STORE_ACL_UNDEFINED_ID && id_at(&a, 5) == STORE_ACL_UNDEFINED_ID);
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_TO_DISK, &e) == 0);
	CHECK(id_at(&a, 1) == 101234 && id_at(&a, 3) == 200077);
	/* a minimal ACL (no named entry, no mask) is valid */
	acl_init(&a);
	ent(&a, 0x01, 7, 0);
	ent(&a, 0x04, 5, 0);
	ent(&a, 0x20, 0, 0);
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_TO_DISK, &e) == 0);
	/* rootless: one id, the store owner's */
	store_idmap rl = {1001, 1001, 1};
	named(&a, 1001, 1001);
	CHECK(store_acl_shift(a.b, a.len, &rl, STORE_ACL_FROM_DISK, &e) == 0);
	CHECK(id_at(&a, 1) == 0 && id_at(&a, 3) == 0);
}

TEST(acl_shift_refuses_ids_out_of_range)
{
	store_idmap ids = {100000, 100000, 65536};
	acl a;
	store_acl_error e;
	named(&a, 99999, 100000);
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_FROM_DISK, &e) == -ERANGE);
	CHECK(e.id == 99999 && !e.group);
	named(&a, 100000, 100000 + 65536);
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_FROM_DISK, &e) == -ERANGE);
	CHECK(e.id == 165536 && e.group);
	named(&a, 65536, 0);
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_TO_DISK, &e) == -ERANGE);
	CHECK(e.id == 65536 && !e.group);
	/* (uid_t)-1 is nobody's id, whatever the range */
	store_idmap all = {0, 0, UINT32_MAX};
	named(&a, STORE_ACL_UNDEFINED_ID, 0);
	CHECK(store_acl_shift(a.b, a.len, &all, STORE_ACL_FROM_DISK, &e) == -ERANGE);
	store_idmap top = {1, 1, UINT32_MAX};
	named(&a, UINT32_MAX - 1, 0);
	CHECK(store_acl_shift(a.b, a.len, &top, STORE_ACL_TO_DISK, &e) == -ERANGE);
}

/* Each malformed ACL, and that it is refused with a reason. */
TEST(acl_shift_refuses_malformed)
{
	store_idmap ids = {0, 0, 65536};
	store_acl_error e;
	acl a;
	CHECK(store_acl_shift(a.b, 0, &ids, STORE_ACL_TO_DISK, &e) == -EINVAL && e.why);
	CHECK(store_acl_shift(NULL, 12, &ids, STORE_ACL_TO_DISK, &e) == -EINVAL);
	acl_init(&a);
	CHECK(store_acl_shift(a.b, 3, &ids, STORE_ACL_TO_DISK, &e) == -EINVAL);
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_TO_DISK, &e) == -EINVAL); /* no entries */
	named(&a, 1, 1);
	a.b[0] = 1; /* version 1 */
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_TO_DISK, &e) == -EINVAL);
	named(&a, 1, 1);
	CHECK(store_acl_shift(a.b, a.len - 3, &ids, STORE_ACL_TO_DISK, &e) == -EINVAL); /* a partial entry */
	named(&a, 1, 1);
	a.b[4 + 8 + 2] = 8; /* perm beyond rwx */
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_TO_DISK, &e) == -EINVAL);
	named(&a, 1, 1);
	a.b[4 + 8] = 0x40; /* unknown tag */
	CHECK(store_acl_shift(a.b, a.len, &ids, STORE_ACL_TO_DISK, &e) == -EINVAL);
	/* entries out of the kernel's rules: {tag, id} in order, perm rwx */
	static const struct {
		const char *what;
		uint16_t e[6][2];
	} bad[] = {
	    {"USER before USER_OBJ", {{0x02, 1}, {0x01, 0}, {0x04, 0}, {0x10, 0}, {0x20, 0}}},
	    {"two USER_OBJ", {{0x01, 0}, {0x01, 0}, {0x04, 0}, {0x20, 0}}},
	    {"a named entry without a mask", {{0x01, 0}, {0x02, 5}, {0x04, 0}, {0x20, 0}}},
	    {"no OTHER", {{0x01, 0}, {0x04, 0}}},
	    {"entries after OTHER", {{0x01, 0}, {0x04, 0}, {0x20, 0}, {0x20, 0}}},
	    {"GROUP before GROUP_OBJ", {{0x01, 0}, {0x08, 3}, {0x04, 0}, {0x10, 0}, {0x20, 0}}},
	    {"MASK twice", {{0x01, 0}, {0x04, 0}, {0x10, 0}, {0x10, 0}, {0x20, 0}}},
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		acl_init(&a);
		for (size_t k = 0; k < 6 && bad[i].e[k][0]; k++)
			ent(&a, bad[i].e[k][0], 7, bad[i].e[k][1]);
		if (store_acl_shift(a.b, a.len, &ids, STORE_ACL_TO_DISK, &e) != -EINVAL) {
			fprintf(stderr, "  accepted: %s\n", bad[i].what);
			CHECK(0);
		}
		if (i == 2)
			CHECK(strstr(e.why, "mask"));
	}
}

TEST(acl_write_corpus_seed)
{
	const char *w = getenv("SBX_WRITE_CORPUS");
	if (!w || strcmp(w, "1") != 0)
		return;
	mkdir("tests/fuzz/corpus/acl", 0755);
	acl a;
	named(&a, 1234, 77);
	FILE *f = fopen("tests/fuzz/corpus/acl/named", "wb");
	CHECK(f);
	fwrite(a.b, 1, a.len, f);
	fclose(f);
	acl_init(&a);
	ent(&a, 0x01, 7, 0);
	ent(&a, 0x04, 5, 0);
	ent(&a, 0x20, 0, 0);
	f = fopen("tests/fuzz/corpus/acl/minimal", "wb");
	CHECK(f);
	fwrite(a.b, 1, a.len, f);
	fclose(f);
}
