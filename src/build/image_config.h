/* An image's configuration and how it meets a create's and an exec's
 * options (docs/build.md "Image config"), the way `docker run` applies an
 * image's config. Pure: no I/O.
 *
 * A built template (`sbx build`) or an imported OCI image records Env, User
 * and its working directory in its snapshot manifest (env, user, cwd) and the
 * rest in the manifest's `config`: an object with the OCI config's names,
 * "Cmd", "Entrypoint", "WorkingDir", "ExposedPorts", "Labels"
 * (store_snapshot.config). An environment made from one keeps that object in
 * its state ("image"), and its snapshots carry it on, as `docker commit`
 * keeps an image's config. What a command then runs with:
 *
 *   env   image Env < create --env < exec --env   (by name, later wins)
 *   user  image USER < create --user < exec --user (root in the image: none)
 *   cwd   image WORKDIR < exec --cwd (no WORKDIR: sbx's default, the user's
 *         home, else /root, else /)
 *   argv  Docker's rule: ENTRYPOINT + (the command given, else CMD); no
 *         ENTRYPOINT: the command given, else CMD; neither: an error.
 */
#pragma once
#include <jansson.h>

#include "util/err.h"

/* One layer's say; NULL fields say nothing. */
typedef struct image_layer {
	const char *const *env; /* "K=V" */
	const char *cwd;
	const char *user;
} image_layer;

typedef struct image_merged {
	char **env;	  /* owned array of borrowed strings (free() the array only); never NULL */
	const char *cwd;  /* borrowed; NULL: sbx's default */
	const char *user; /* borrowed; NULL: root (or the environment's default) */
} image_merged;

/* Merges the layers in order (image, create, exec; any may be NULL): env by
 * name, later wins, in the order names first appear; cwd and user from the
 * last layer that sets them, except that the image's user "root" (or "0",
 * "0:0") says nothing. */
int image_merge(const image_layer *const *layers, size_t n, image_merged *ret, sbx_err **err);

/* The config object (any of its keys absent) as the manifest's canonical
 * text, or *ret = NULL if it holds nothing. Refuses what the manifest would:
 * keys other than the five, wrong types, a relative WorkingDir. */
int image_config_text(const json_t *config, char **ret, sbx_err **err);

/* The image's WorkingDir, or NULL. config may be NULL. */
const char *image_config_workdir(const json_t *config);

/* The command `sbx run` runs: argv (may be NULL or empty) against the
 * image's Entrypoint and Cmd, by Docker's rule (above). *ret is a new
 * NULL-terminated vector; invalid_argument when there is nothing to run. */
int image_command(const json_t *config, const char *const *argv, char ***ret, sbx_err **err);
