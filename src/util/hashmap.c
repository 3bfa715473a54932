/* Open-addressing hash maps (hashmap.h). */
#include "util/hashmap.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "util/macro.h"

static uint64_t hash64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
	return h;
}

static int hashmap_grow(hashmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	hashmap n = {.keys = calloc(cap, sizeof(uint64_t)),
		     .vals = calloc(cap, sizeof(void *)),
		     .used = calloc(cap, 1),
		     .cap = cap,
		     .n = m->n};
	if (!n.keys || !n.vals || !n.used) {
		free(n.keys);
		free(n.vals);
		free(n.used);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->used[i])
			continue;
		size_t j = hash64(m->keys[i]) & (cap - 1);
		while (n.used[j])
			j = (j + 1) & (cap - 1);
		n.used[j] = 1;
		n.keys[j] = m->keys[i];
		n.vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	free(m->used);
	*m = n;
	return 0;
}

void **hashmap_slot(hashmap *m, uint64_t key)
{
	if ((m->n + 1) * 2 > m->cap && hashmap_grow(m) < 0)
		return NULL;
	size_t j = hash64(key) & (m->cap - 1);
	while (m->used[j]) {
		if (m->keys[j] == key)
			return &m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	m->used[j] = 1;
	m->keys[j] = key;
	m->vals[j] = NULL;
	m->n++;
	return &m->vals[j];
}

void *hashmap_get(const hashmap *m, uint64_t key)
{
	if (!m->cap)
		return NULL;
	size_t j = hash64(key) & (m->cap - 1);
	while (m->used[j]) {
		if (m->keys[j] == key)
			return m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

void hashmap_free(hashmap *m, void (*free_val)(void *))
{
	for (size_t i = 0; free_val && i < m->cap; i++)
		if (m->used[i])
			free_val(m->vals[i]);
	free(m->keys);
	free(m->vals);
	free(m->used);
	*m = (hashmap){0};
}

static int strmap_grow(strmap *m)
{
	size_t cap = m->cap ? m->cap * 2 : 64;
	char **keys = calloc(cap, sizeof(char *));
	void **vals = calloc(cap, sizeof(void *));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = hash_str(m->keys[i]) & (cap - 1);
		while (keys[j])
			j = (j + 1) & (cap - 1);
		keys[j] = m->keys[i];
		vals[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = keys;
	m->vals = vals;
	m->cap = cap;
	return 0;
}

/* The index of key's entry, inserted when absent; -1 on ENOMEM. */
static ssize_t strmap_find(strmap *m, const char *key)
{
	if ((m->n + 1) * 2 > m->cap && strmap_grow(m) < 0)
		return -1;
	size_t j = hash_str(key) & (m->cap - 1);
	while (m->keys[j]) {
		if (streq(m->keys[j], key))
			return j;
		j = (j + 1) & (m->cap - 1);
	}
	if (!(m->keys[j] = strdup(key)))
		return -1;
	m->vals[j] = NULL;
	m->n++;
	return j;
}

void **strmap_slot(strmap *m, const char *key)
{
	ssize_t j = strmap_find(m, key);
	return j < 0 ? NULL : &m->vals[j];
}

const char *strmap_intern(strmap *m, const char *key)
{
	ssize_t j = strmap_find(m, key);
	return j < 0 ? NULL : m->keys[j];
}

void strmap_free(strmap *m, void (*free_val)(void *))
{
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		free(m->keys[i]);
		if (free_val)
			free_val(m->vals[i]);
	}
	free(m->keys);
	free(m->vals);
	*m = (strmap){0};
}

static int cmp_strp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

const char **strmap_sorted(const strmap *m)
{
	const char **v = malloc((m->n + 1) * sizeof(char *));
	if (!v)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < m->cap; i++)
		if (m->keys[i])
			v[k++] = m->keys[i];
	qsort(v, k, sizeof(char *), cmp_strp);
	v[k] = NULL;
	return v;
}
