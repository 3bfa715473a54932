/* Thin helpers over jansson. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include "util/macro.h"

#define _cleanup_json_ _cleanup_(json_decrefp)

/* NULL-terminated string vector <-> JSON array of strings. */
json_t *json_from_strv(const char *const *v);
/* True if `a` is an array of strings (possibly empty). */
bool json_is_strv(const json_t *a);
/* Returns a malloc'd strv or NULL if `a` is not an array of strings (or ENOMEM). */
char **json_to_strv(const json_t *a);
/* Sends/receives one JSON document with optional fds on a SOCK_SEQPACKET socket. */
int json_send(int sock, const json_t *msg, const int *fds, size_t n_fds);
/* Returns 1 on a message, 0 on EOF, negative errno on failure. */
int json_recv(int sock, json_t **ret, int *fds, size_t *n_fds);
const char *json_str(const json_t *obj, const char *key);	    /* NULL if absent/not string */
int64_t json_int(const json_t *obj, const char *key, int64_t dflt); /* dflt if absent/not int */
bool json_bool(const json_t *obj, const char *key, bool dflt);
/* prefix + the array's strings joined by sep; NULL if an element is not a
 * string (or ENOMEM). */
char *json_join_strings(const json_t *a, const char *prefix, char sep);
/* Finds the first string (or object key) in v holding a NUL byte (JSON
 * \u0000, which a C string would cut short), skipping the values of v's
 * top-level keys listed in skip_top (NULL-terminated, may be NULL). Returns
 * 1 with *ret_path (malloc'd: "env.A", "argv[2]"), 0 if there is none, or
 * -ENOMEM. */
int json_find_nul(const json_t *v, const char *const *skip_top, char **ret_path);
