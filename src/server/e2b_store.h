/* What the E2B front door keeps about each sandbox it made (docs/e2b.md):
 * its access token (envdAccessToken), the template id the client named, its
 * metadata, its start and its absolute end (E2B's timeout), what happens at
 * the end (kill, or pause with autoPause) and its size as reported to
 * clients. The sandbox itself is the sbx environment of the same id; this
 * is the E2B half only.
 *
 * One file per sandbox, DIR/<id>.json, mode 0600 in a directory of mode
 * 0700 (the token is a credential), written atomically: a restarted
 * `sbx serve` finds every sandbox, token and deadline again. The records
 * are also held in memory; every call is thread-safe. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/e2b_auth.h"
#include "util/err.h"

#define E2B_TEMPLATE_MAX 255 /* longest template id accepted */

typedef struct e2b_record {
	char id[E2B_ID_MAX + 1];
	char token[E2B_TOKEN_LEN + 1];
	char template_id[E2B_TEMPLATE_MAX + 1];
	json_t *metadata;   /* an object of strings (owned: e2b_record_clear) */
	int64_t started_ms; /* unix ms */
	int64_t end_ms;	    /* unix ms: the deadline (E2B's timeout), unless paused */
	bool auto_pause;    /* at the deadline: pause instead of remove */
	bool paused;	    /* paused through the API: no deadline runs until a connect */
	int cpu_count;
	int64_t memory_mb, disk_mb;
} e2b_record;

typedef struct e2b_store e2b_store;

/* Opens (creating it, mode 0700) the directory dir and loads its records;
 * files that do not parse are skipped. */
int e2b_store_open(const char *dir, e2b_store **ret, sbx_err **err);
void e2b_store_free(e2b_store *s); /* NULL is a no-op */

/* Writes r (a copy: the caller keeps r) to its file and the table, replacing
 * the record of the same id. */
int e2b_store_put(e2b_store *s, const e2b_record *r, sbx_err **err);
/* True with a copy of id's record in *ret (e2b_record_clear it). */
bool e2b_store_get(e2b_store *s, const char *id, e2b_record *ret);
/* Drops id's record and its file; no record is no error. */
void e2b_store_remove(e2b_store *s, const char *id);
/* Copies of every record (free with e2b_records_free). -ENOMEM. */
int e2b_store_list(e2b_store *s, e2b_record **ret, size_t *ret_n);
/* The earliest deadline of the records not paused, INT64_MAX if none;
 * with due, a copy of that record in *due when the deadline is <= now_ms. */
int64_t e2b_store_next_deadline(e2b_store *s, int64_t now_ms, e2b_record *due, bool *ret_due);

/* The record as JSON and back (the file's content); from_json fails on a
 * record that is not one (a bad id, token or type). Pure. */
json_t *e2b_record_to_json(const e2b_record *r);
int e2b_record_from_json(const json_t *j, e2b_record *ret);
void e2b_record_clear(e2b_record *r);
void e2b_records_free(e2b_record *v, size_t n);
