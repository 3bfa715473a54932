/* Virtual inode and device numbers: determ_inode.h. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "trace/determ_inode.h"

struct determ_ino_ent {
	uint64_t dev, ino, v;
	bool used;
	bool removed; /* forgotten: the next observation is a new file */
};

struct determ_dev_ent {
	uint64_t dev, next_ino;
};

static size_t slot_of(uint64_t dev, uint64_t ino, size_t cap)
{
	uint64_t h = (dev * 0x9e3779b97f4a7c15ULL) ^ (ino + 0x632be59bd9b4e019ULL + (dev << 6) + (dev >> 2));
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 29;
	return (size_t)h & (cap - 1);
}

static struct determ_ino_ent *find(struct determ_ino_ent *ents, size_t cap, uint64_t dev, uint64_t ino)
{
	size_t i = slot_of(dev, ino, cap);
	while (ents[i].used && (ents[i].dev != dev || ents[i].ino != ino))
		i = (i + 1) & (cap - 1);
	return &ents[i];
}

static bool grow(determ_inomap *m)
{
	if (m->cap && (m->n + 1) * 4 < m->cap * 3)
		return true;
	size_t cap = m->cap ? m->cap * 2 : 1024;
	struct determ_ino_ent *e = calloc(cap, sizeof(*e));
	if (!e)
		return false;
	for (size_t i = 0; i < m->cap; i++)
		if (m->ents[i].used)
			*find(e, cap, m->ents[i].dev, m->ents[i].ino) = m->ents[i];
	free(m->ents);
	m->ents = e;
	m->cap = cap;
	return true;
}

/* The device's index in observation order (added when new); -1: out of memory. */
static long dev_index(determ_inomap *m, uint64_t dev)
{
	for (size_t i = 0; i < m->n_devs; i++)
		if (m->devs[i].dev == dev)
			return (long)i;
	if (m->n_devs >= DETERM_DEV_MAX)
		return (long)m->n_devs - 1;
	if (m->n_devs == m->cap_devs) {
		size_t cap = m->cap_devs ? m->cap_devs * 2 : 16;
		struct determ_dev_ent *d = realloc(m->devs, cap * sizeof(*d));
		if (!d)
			return -1;
		m->devs = d;
		m->cap_devs = cap;
	}
	m->devs[m->n_devs] = (struct determ_dev_ent){dev, DETERM_INO_FIRST};
	return (long)m->n_devs++;
}

uint64_t determ_dev_map(determ_inomap *m, uint64_t dev)
{
	long i = dev_index(m, dev);
	return i < 0 ? dev : makedev(0, DETERM_DEV_FIRST + (unsigned)i);
}

uint64_t determ_ino_map(determ_inomap *m, uint64_t dev, uint64_t ino)
{
	if (ino == 0)
		return 0;
	if (!grow(m))
		return ino;
	struct determ_ino_ent *s = find(m->ents, m->cap, dev, ino);
	if (!s->used || s->removed) {
		long d = dev_index(m, dev);
		if (d < 0)
			return ino;
		m->n += !s->used;
		*s = (struct determ_ino_ent){dev, ino, m->devs[d].next_ino++, true, false};
	}
	return s->v;
}

bool determ_ino_known(const determ_inomap *m, uint64_t dev, uint64_t ino)
{
	if (ino == 0)
		return true;
	if (!m->cap)
		return false;
	const struct determ_ino_ent *s = find(m->ents, m->cap, dev, ino);
	return s->used && !s->removed;
}

/* The length of the getdents record at off (its d_ino in *ino), or 0 where
 * none fits: the end of the listing, or a record the walk must not trust. */
static size_t rec_at(const uint8_t *buf, size_t len, size_t off, uint64_t *ino)
{
	uint16_t reclen;
	if (len - off < 19)
		return 0;
	memcpy(&reclen, buf + off + 16, sizeof(reclen));
	if (reclen < 19 || reclen > len - off)
		return 0;
	memcpy(ino, buf + off, sizeof(*ino));
	return reclen;
}

bool determ_dirents_have_new(const determ_inomap *m, uint64_t dev, const uint8_t *buf, size_t len)
{
	uint64_t ino;
	for (size_t off = 0, r; (r = rec_at(buf, len, off, &ino)); off += r)
		if (!determ_ino_known(m, dev, ino))
			return true;
	return false;
}

typedef struct named {
	const char *name;
	size_t len;
	uint64_t ino;
} named;

static int cmp_named(const void *a, const void *b)
{
	const named *x = a, *y = b;
	int c = memcmp(x->name, y->name, x->len < y->len ? x->len : y->len);
	if (c)
		return c;
	return x->len < y->len ? -1 : x->len > y->len;
}

size_t determ_dirents_number(determ_inomap *m, uint64_t dev, const uint8_t *buf, size_t len)
{
	size_t n = 0, cap = 0, done = 0;
	named *v = NULL;
	uint64_t ino;
	for (size_t off = 0, reclen; (reclen = rec_at(buf, len, off, &ino)); off += reclen) {
		if (!determ_ino_known(m, dev, ino)) {
			if (n == cap) {
				size_t nc = cap ? cap * 2 : 64;
				named *nv = realloc(v, nc * sizeof(*nv));
				if (!nv)
					break; /* out of memory: the rest get numbers as they are listed */
				v = nv, cap = nc;
			}
			const char *name = (const char *)buf + off + 19;
			v[n++] = (named){name, strnlen(name, reclen - 19), ino};
		}
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_named);
	for (size_t i = 0; i < n; i++)
		if (!determ_ino_known(m, dev, v[i].ino)) { /* two names of one file: the first */
			determ_ino_map(m, dev, v[i].ino);
			done++;
		}
	free(v);
	return done;
}

void determ_ino_forget(determ_inomap *m, uint64_t dev, uint64_t ino)
{
	if (!m->cap)
		return;
	struct determ_ino_ent *s = find(m->ents, m->cap, dev, ino);
	if (s->used)
		s->removed = true;
}

size_t determ_dirents_map(determ_inomap *m, uint64_t dev, uint8_t *buf, size_t len, uint64_t *out, size_t max)
{
	size_t n = 0;
	uint64_t ino;
	for (size_t off = 0, r; (r = rec_at(buf, len, off, &ino)); off += r) {
		ino = determ_ino_map(m, dev, ino);
		memcpy(buf + off, &ino, sizeof(ino));
		if (out && n < max)
			out[n] = ino;
		n++;
	}
	return n;
}

void determ_inomap_free(determ_inomap *m)
{
	free(m->ents);
	free(m->devs);
	*m = (determ_inomap){0};
}
