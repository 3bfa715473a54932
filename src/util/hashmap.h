/* Open-addressing hash maps: uint64 key -> value slot (hashmap), and the
 * same keyed by string, the map owning a copy of each key (strmap). Zero
 * initialised is empty. Pure. */
#pragma once
#include <stddef.h>
#include <stdint.h>

typedef struct hashmap {
	uint64_t *keys;
	void **vals;
	uint8_t *used;
	size_t cap, n;
} hashmap;
/* The value slot for key, inserted (*slot == NULL) when absent; NULL on
 * ENOMEM. A later insert may move slots. */
void **hashmap_slot(hashmap *m, uint64_t key);
void *hashmap_get(const hashmap *m, uint64_t key);
void hashmap_free(hashmap *m, void (*free_val)(void *));

typedef struct strmap {
	char **keys;
	void **vals;
	size_t cap, n;
} strmap;
void **strmap_slot(strmap *m, const char *key);
/* The map's own copy of key (inserted if absent): equal strings, one pointer. NULL on ENOMEM. */
const char *strmap_intern(strmap *m, const char *key);
void strmap_free(strmap *m, void (*free_val)(void *));
/* The keys, sorted (strcmp); malloc'd array of borrowed pointers, NULL on ENOMEM. */
const char **strmap_sorted(const strmap *m);
