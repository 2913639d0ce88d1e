/*
 * The runner's check of a recipe (se_recipe_check, runner.c): the warm
 * path reads a stored recipe back and checks every reference in it before
 * the runner uses any. The check must never read past the bytes it is
 * given, whatever they are.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "recipe.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* As the warm path holds a recipe: a buffer of its own, exactly its
	 * size (so that AddressSanitizer sees a read past it), 8-aligned. */
	unsigned char *r = malloc(size ? size : 1);
	CHECK(r != NULL);
	if (size)
		memcpy(r, data, size);
	int ok = se_recipe_check(r, size);
	CHECK(ok == 0 || ok == 1);
	if (ok) {
		/* What the runner takes on trust once the check passed. */
		const struct se_recipe *h = (const struct se_recipe *)r;
		CHECK(size >= sizeof *h && h->size == size && h->version == SE_RCP_VERSION &&
		      memcmp(h->magic, SE_RCP_MAGIC, 8) == 0);
	}
	/* Not 8-aligned: always refused (the runner reads records in place). */
	if (size > 0 && size < (1u << 16)) {
		unsigned char *m = malloc(size + 1);
		CHECK(m != NULL);
		memcpy(m + 1, data, size);
		CHECK(se_recipe_check(m + 1, size) == 0);
		free(m);
	}
	free(r);
	return 0;
}

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

/* Half the time the mutator keeps the header's size equal to the input's
 * length: most mutations change the length, and the check refuses a
 * recipe whose size disagrees before it reads any reference. A quarter of
 * the time it also writes a value at the edge of a reference's range
 * (both fields of struct se_rref are 4-aligned u32s) over a random aligned
 * word: the check has a branch per reference and way of being out of
 * range, and random bytes rarely hit one. */
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	size = LLVMFuzzerMutate(data, size, max);
	if ((seed & 1) && size >= offsetof(struct se_recipe, size) + sizeof(uint32_t)) {
		uint32_t n = (uint32_t)size;
		memcpy(data + offsetof(struct se_recipe, size), &n, sizeof n);
	}
	if ((seed & 6) == 6 && size >= 2 * sizeof(uint32_t)) {
		const uint32_t edges[] = {0, 1, 7, 8, (uint32_t)sizeof(struct se_recipe) - 1, (uint32_t)sizeof(struct se_recipe),
					  (uint32_t)size - 1, (uint32_t)size, (uint32_t)size + 1, 0x7fffffff, 0xffffffff};
		uint32_t v = edges[(seed >> 3) % (sizeof edges / sizeof edges[0])];
		size_t at = ((seed >> 7) % (size / sizeof v)) * sizeof v;
		memcpy(data + at, &v, sizeof v);
	}
	return size;
}
