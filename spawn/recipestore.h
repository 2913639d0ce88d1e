/*
 * Looking up a stored recipe before the Go runtime starts. Go decides a
 * run and stores its recipe (package recipestore); a later run with the
 * same recipe key (recipekey.h) finds it here. Nothing here decides
 * anything: it finds the user's state directory where statedir.h's rule
 * puts it, checks it as runstate does, and accepts the file only when the user's
 * secret key authenticates it.
 *
 * An entry is <state dir>/recipes/<64 lowercase hex digits of the key>:
 *
 *   "SERECIP1"                  8 bytes, the magic
 *   u32 little endian           the body's length, at most SE_RECIPE_MAX_BODY
 *   key                         32 bytes, the recipe key it was stored under
 *   mac                         32 bytes, HMAC-SHA256(secret, magic || length || key || body)
 *   body                        the recipe
 *
 * where secret is the 32 bytes of the state directory's file "key"
 * (runstate.Key).
 */
#ifndef SE_RECIPESTORE_H
#define SE_RECIPESTORE_H

#include <stddef.h>

#define SE_RECIPE_MAGIC "SERECIP1"
#define SE_RECIPE_HEADER (8 + 4 + 32 + 32)
#define SE_RECIPE_MAX_BODY (4u << 20)

/* se_recipe_lookup finds the recipe stored under key. It returns 1 with
 * *body a malloc'd copy of it (the caller frees it) and *len its length,
 * or 0 on any failure at all: no entry, a state directory, entry or key
 * file that fails its checks, a file that is not authentic or not stored
 * under this key. A failure is a miss, never reported: the caller then
 * starts Go, which decides the run as it would without a recipe. The
 * state directory is found where statedir.h says it lies (as runstate,
 * which asks the same code) and checked as runstate.Lookup("recipes") and
 * runstate.LookupKey check theirs: the parent of the state directory owned by root or the user and not
 * writable by others unless sticky; the state directory and its
 * "recipes" real directories of the user's with no rights for group or
 * others; the entry and "key" the user's regular files with no rights for
 * group or others, opened without following a link. */
int se_recipe_lookup(const unsigned char key[32], unsigned char **body, size_t *len);

/* A body's parts (spawn.StoredRecipe writes them): a head of four u32
 * little endian (the lengths of the dependencies, the recipe and the
 * service record, then 0), then each part 8-aligned from the body's start:
 * the decision's filesystem dependencies (deps.h), the recipe (recipe.h),
 * and the service record Go serves the run from (opaque here). */
struct se_stored_parts {
	size_t deps_off, deps_len, recipe_off, recipe_len, record_off, record_len;
};

/* se_stored_split finds the parts of a body of len bytes: 1 when its head
 * says lengths that fill it exactly, 0 otherwise. */
int se_stored_split(const unsigned char *body, size_t len, struct se_stored_parts *p);

/* se_recipe_set_base makes dir the state directory (NULL: where it
 * normally is), for tests only, as runstate.Base does for Go; it is
 * checked as the normal one is (its parent, itself, "recipes"). Never
 * set from the environment: the environment belongs to the caller, who
 * must not be able to point the lookup at a directory of its choosing. */
void se_recipe_set_base(const char *dir);

#endif
