/* Module-private interface of sbx build (docs/build.md): the state of one
 * build and the calls between the files it is split into:
 *
 *   build.c       the build: steps, cache, the final template (sbx_build)
 *   build_copy.c  COPY and ADD: context sources staged, their digest
 *   build_env.c   the live environment missed steps run in
 *
 * Calls go one way: build.c -> build_copy.c, build_env.c. */
#pragma once
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "api/api.h"
#include "build/dockerfile.h"
#include "store/digest.h"

typedef struct build {
	sbx_ctx *ctx;
	const sbx_build_opts *o;
	const char *name;
	char escape;
	char key[STORE_DIGEST_SIZE];
	char cur[STORE_DIGEST_SIZE]; /* the current snapshot, or "" for a template spec */
	char *base_spec;	     /* FROM host / dir:PATH: create from this spec */
	char *env_id;		     /* live environment matching cur, or NULL */
	char **env;		     /* ENV, "K=V" (later wins) */
	size_t n_env;
	char **args; /* ARG values in effect */
	size_t n_args;
	char **ignore;
	char *workdir, *user;
	json_t *shell, *cmd, *entrypoint, *expose, *labels;
	json_t *steps;
	int hits, misses;
} build;

/* ---- build_copy.c ---- */

/* COPY/ADD args (after substitution): the sources staged in a new
 * directory (*ret_staging, owned), their destination (*ret_dest) and what
 * the cache key gets of them (*ret_extra). */
int build_step_copy(build *b, const dockerfile_instr *in, const char *args, char **ret_extra,
		    char **ret_staging, char **ret_dest, sbx_err **err);

/* ---- build_env.c ---- */

/* Substitution variables: ARGs, then ENV (ENV wins, as in Docker); the
 * strings are borrowed: free only the array. */
char **build_vars(const build *b);
/* The live environment (b->env_id) for b->cur or the base spec, created if there is none. */
int build_env_ensure(build *b, sbx_err **err);
void build_env_drop(build *b);
int build_env_mkdir_p(build *b, const char *path, sbx_err **err);
/* Puts the staged tree into the live environment at dir. */
int build_env_put_tree(build *b, const char *staging, const char *dir, sbx_err **err);
int build_run_argv(build *b, const char *const *argv, const char *user, sbx_exec_result *res, sbx_err **err);
