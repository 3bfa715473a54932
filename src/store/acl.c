#include "store/acl.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#define TAG_USER_OBJ 0x01
#define TAG_USER 0x02
#define TAG_GROUP_OBJ 0x04
#define TAG_GROUP 0x08
#define TAG_MASK 0x10
#define TAG_OTHER 0x20
#define HEADER 4
#define ENTRY 8

bool store_acl_xattr(const char *name)
{
	return name && (strcmp(name, STORE_ACL_ACCESS) == 0 || strcmp(name, STORE_ACL_DEFAULT) == 0);
}

static int bad(store_acl_error *e, const char *why)
{
	if (e)
		*e = (store_acl_error){.why = why};
	return -EINVAL;
}

static int out_of_range(store_acl_error *e, uint32_t id, bool group)
{
	if (e)
		*e = (store_acl_error){.id = id, .group = group};
	return -ERANGE;
}

static uint32_t get32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return le32toh(v);
}

static uint16_t get16(const uint8_t *p)
{
	uint16_t v;
	memcpy(&v, p, 2);
	return le16toh(v);
}

static void put32(uint8_t *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

/* One named id through the map; false if it is out of range. */
static bool map_id(uint32_t id, uint32_t base, uint32_t count, store_acl_dir dir, uint32_t *ret)
{
	uint64_t v;
	if (dir == STORE_ACL_FROM_DISK) {
		if (id < base || (uint64_t)id - base >= count)
			return false;
		v = (uint64_t)id - base;
	} else {
		if (id >= count)
			return false;
		v = (uint64_t)base + id;
	}
	if (v >= STORE_ACL_UNDEFINED_ID) /* (uid_t)-1 names nobody: the kernel refuses it */
		return false;
	*ret = (uint32_t)v;
	return true;
}

int store_acl_shift(uint8_t *value, size_t len, const store_idmap *ids, store_acl_dir dir, store_acl_error *e)
{
	if (!value || len < HEADER)
		return bad(e, "shorter than its header");
	if (get32(value) != STORE_ACL_VERSION)
		return bad(e, "not version 2");
	if ((len - HEADER) % ENTRY)
		return bad(e, "not a whole number of entries");
	if (len == HEADER)
		return bad(e, "no entries");
	/* The kernel's posix_acl_valid(), as a state machine over the tags. */
	enum { S_USER_OBJ, S_USER, S_GROUP, S_OTHER, S_DONE } state = S_USER_OBJ;
	bool named = false;
	for (size_t off = HEADER; off < len; off += ENTRY) {
		uint8_t *en = value + off;
		uint16_t tag = get16(en), perm = get16(en + 2);
		uint32_t id = get32(en + 4);
		if (perm & ~7u)
			return bad(e, "permission bits beyond rwx");
		switch (tag) {
		case TAG_USER_OBJ:
			if (state != S_USER_OBJ)
				return bad(e, "entries out of order");
			state = S_USER;
			break;
		case TAG_USER:
		case TAG_GROUP: {
			bool g = tag == TAG_GROUP;
			if (state != (g ? S_GROUP : S_USER))
				return bad(e, "entries out of order");
			uint32_t out;
			if (!map_id(id, g ? ids->gid_base : ids->uid_base, ids->count, dir, &out))
				return out_of_range(e, id, g);
			put32(en + 4, out);
			named = true;
			continue;
		}
		case TAG_GROUP_OBJ:
			if (state != S_USER)
				return bad(e, "entries out of order");
			state = S_GROUP;
			break;
		case TAG_MASK:
			if (state != S_GROUP)
				return bad(e, "entries out of order");
			state = S_OTHER;
			break;
		case TAG_OTHER:
			if (state != S_OTHER && !(state == S_GROUP && !named))
				return bad(e, state == S_GROUP ? "named entries without a mask"
							       : "entries out of order");
			state = S_DONE;
			break;
		default:
			return bad(e, state == S_DONE ? "entries after OTHER" : "unknown tag");
		}
		if (state == S_DONE && off + ENTRY < len)
			return bad(e, "entries after OTHER");
		put32(en + 4, STORE_ACL_UNDEFINED_ID);
	}
	if (state != S_DONE)
		return bad(e, "incomplete (USER_OBJ, GROUP_OBJ and OTHER are required)");
	return 0;
}
