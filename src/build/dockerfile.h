/* Dockerfiles, as `sbx build` reads them (docs/build.md). Pure: no I/O.
 *
 * Grammar (the subset of Docker's that sbx honours, with Docker's rules):
 *   - parser directives at the very top: `# escape=\` or `# escape=``,
 *     `# syntax=...` (accepted and ignored: it only names a frontend);
 *   - a line ending in the escape character continues on the next; comment
 *     lines (first non-blank `#`) and blank lines inside a continuation are
 *     dropped, as Docker does;
 *   - INSTRUCTION ARGS, the keyword case-insensitive; flags `--name=value`
 *     right after the keyword (COPY/ADD --chown --chmod; nothing else);
 *   - the exec form: ARGS a JSON array of strings (RUN, CMD, ENTRYPOINT,
 *     SHELL), else the shell form (the raw text).
 * Refusals (each an invalid_argument error "Dockerfile:LINE: ..."):
 *   instructions sbx cannot honour (HEALTHCHECK, ONBUILD, STOPSIGNAL, VOLUME,
 *   MAINTAINER is accepted as a LABEL), heredocs (`<<EOF`), flags other than
 *   the above (RUN --mount, COPY --from: no multi-stage), a second FROM, an
 *   instruction before FROM other than ARG, an unterminated continuation at
 *   the end, a missing argument, lines over DOCKERFILE_MAX_LINE bytes, more than
 *   DOCKERFILE_MAX_INSTR instructions. */
#pragma once
#include <stdbool.h>
#include <stddef.h>
#include "util/err.h"

#define DOCKERFILE_MAX_INSTR 4096
#define DOCKERFILE_MAX_LINE (1u << 20)

typedef enum dockerfile_kind {
	DF_FROM,
	DF_RUN,
	DF_COPY,
	DF_ADD,
	DF_ENV,
	DF_ARG,
	DF_WORKDIR,
	DF_USER,
	DF_LABEL,
	DF_SHELL,
	DF_CMD,
	DF_ENTRYPOINT,
	DF_EXPOSE,
} dockerfile_kind;

typedef struct dockerfile_instr {
	dockerfile_kind kind;
	unsigned line; /* 1-based line of the keyword */
	char *keyword; /* as written, upper-cased */
	char *args;    /* the text after the keyword and flags, continuations joined */
	char **argv;   /* exec form (NULL-terminated), or NULL for the shell form */
	char *chown;   /* COPY/ADD --chown, or NULL */
	char *chmod;   /* COPY/ADD --chmod (octal), or NULL */
	char *text;    /* the whole instruction, normalised (cache keys) */
} dockerfile_instr;

typedef struct dockerfile {
	char escape; /* '\\' or '`' */
	dockerfile_instr *instr;
	size_t n;
} dockerfile;

void dockerfile_free(dockerfile *d);
static inline void dockerfile_freep(dockerfile **d)
{
	dockerfile_free(*d);
}
#define _cleanup_dockerfile_ _cleanup_(dockerfile_freep)

/* Parses `len` bytes of text (NUL bytes refused). `name` prefixes errors
 * ("Dockerfile"). *ret on success (caller frees). */
int dockerfile_parse(const char *text, size_t len, const char *name, dockerfile **ret, sbx_err **err);

/* Docker's variable substitution: $V, ${V}, ${V:-word}, ${V:+word}, and the
 * escape character before `$` for a literal `$`. `vars` is a NULL-terminated
 * "K=V" list, later entries win; an unset variable expands to "". */
int dockerfile_expand(const char *s, const char *const *vars, char escape, char **ret, sbx_err **err);

/* Splits "K=V K2="v 2"" (or the legacy one-pair form "K V", with legacy)
 * into NULL-terminated "K=V" strings with quotes removed and the escape
 * character honoured. */
int dockerfile_pairs(const char *s, bool legacy, char escape, char ***ret, sbx_err **err);

/* Splits a shell-form COPY/ADD argument list into words (quotes honoured):
 * at least two, the last the destination. */
int dockerfile_words(const char *s, char escape, char ***ret, sbx_err **err);

/* .dockerignore: patterns one a line (`#` comments, `!` exceptions, `**`
 * any number of directories, leading `/` and `./` dropped). True if `path`
 * (relative to the context, no leading slash) is excluded: the last pattern
 * matching it or one of its parent directories decides. */
bool dockerignore_excluded(const char *const *patterns, const char *path);
/* Parses a .dockerignore's text into patterns (NULL-terminated). */
int dockerignore_parse(const char *text, size_t len, char ***ret, sbx_err **err);
