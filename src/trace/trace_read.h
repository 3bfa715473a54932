/* Reading a trace stream (trace_format.h) held in memory: a validating
 * iterator and a merge of two streams. Pure; no I/O.
 *
 * The input is untrusted (a stored trace may be corrupt or hand-made, and
 * the reader is fuzzed): every length is checked against the record and the
 * buffer before anything is read, the buffer need not be aligned (fixed
 * parts are copied out with memcpy), and every string handed out is
 * NUL-terminated inside its record. A malformed stream yields an error that
 * names the byte offset and the reason; nothing is guessed past it. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sbx.h"
#include "trace/trace_format.h"

/* One validated record. Pointers point into the stream buffer. */
typedef struct trace_ev {
	size_t off;	    /* offset of the record in the stream */
	uint64_t seq;	    /* index among the records returned so far (0-based) */
	const uint8_t *raw; /* the record's bytes (len of them) */
	uint16_t type, len;
	uint32_t pid, tid, flags;
	uint64_t ts_ns;
	union {
		struct {
			int32_t nr;
			int64_t ret; /* valid with TRS_HAS_RET */
			uint64_t args[6];
			uint64_t enter_ns;
			const char *str[2]; /* str0/str1, NULL when absent (length 0) */
		} sys;
		struct {
			uint32_t parent_pid, parent_tid;
		} fork;
		struct {
			const char *filename; /* NULL when absent */
			const char *argv;     /* argc NUL-terminated strings back to back, argv_len bytes */
			size_t argv_len;
			uint32_t argc; /* strings actually present in argv (not the record's field) */
		} exec;
		struct {
			int32_t status;
		} exit;
		struct {
			uint64_t count;
		} lost;
		struct {
			uint32_t kind;
			int32_t nr;
			const uint8_t *value;
			uint32_t value_len;
		} determ;
	};
} trace_ev;

typedef struct trace_reader {
	const uint8_t *buf;
	size_t len;
	size_t off;		      /* of the next record */
	struct trace_file_header hdr; /* copied at init */
	uint64_t n;		      /* records returned */
	uint64_t n_unknown;	      /* records of unknown type met (skipped unless keep_unknown) */
	bool keep_unknown;	      /* return unknown types too (only the common header is decoded) */
	bool failed;		      /* a malformed record was met; next() keeps failing */
} trace_reader;

/* Checks the stream header (size, magic, version). */
int trace_read_init(trace_reader *r, const void *buf, size_t len, sbx_err **err);
/* The next record: 1 with *ret filled, 0 at the end of the stream, negative
 * (invalid_argument, EBADMSG) on a malformed record, naming its offset. */
int trace_read_next(trace_reader *r, trace_ev *ret, sbx_err **err);
/* Validates a whole stream; *ret_records (may be NULL) gets the number of
 * known records. */
int trace_check(const void *buf, size_t len, uint64_t *ret_records, sbx_err **err);

/* Merges two streams by record timestamp (h.ts_ns). Stable: on equal
 * timestamps a's record comes first, and each input keeps its own order even
 * where it is not sorted. The result has one header: a's, with start_ns the
 * earlier of the two. Records of unknown types are kept. Both streams are
 * validated first; their arch must agree. *ret is malloc'd. */
int trace_merge(const void *a, size_t a_len, const void *b, size_t b_len, void **ret, size_t *ret_len,
		sbx_err **err);

/* Record sizes the reader requires per type (fixed part). */
size_t trace_rec_min_size(uint16_t type); /* 0 for unknown types */
