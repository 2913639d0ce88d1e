/*
 * The lookup of a stored recipe (se_recipe_lookup, recipestore.c): the
 * entry format (magic, body length, key) and its HMAC, read back from the
 * state directory, which a sandboxed program of the same user can write.
 * The lookup must accept exactly the entries made under this key with this
 * user's secret, and hand back exactly their body.
 *
 * The first input byte says what the harness makes right before it writes
 * the rest as the entry, so that the fuzzer reaches the checks behind the
 * MAC: 1 the body length, 2 the magic, 4 the key, 8 the MAC; 16 gives the
 * entry a mode that lets the group read it (refused). The state directory
 * is in a private tmpfs (confine.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "confine.h"
#include "recipestore.h"
#include "sha256.h"

#define STATE "/state"

static const unsigned char key[32] = "the key of this fuzzer's entry.";
static const unsigned char secret[32] = "this user's secret (state/key).";
static char entry[256];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	se_fuzz_confine(*argc, *argv, NULL);
	/* (Made already when this is -merge's inner process.) */
	CHECK((mkdir(STATE, 0700) == 0 || errno == EEXIST) && (mkdir(STATE "/recipes", 0700) == 0 || errno == EEXIST));
	int fd = open(STATE "/key", O_WRONLY | O_CREAT | O_TRUNC, 0600);
	CHECK(fd >= 0 && write(fd, secret, sizeof secret) == (ssize_t)sizeof secret);
	close(fd);
	int n = snprintf(entry, sizeof entry, STATE "/recipes/");
	for (size_t i = 0; i < sizeof key; i++)
		n += snprintf(entry + n, sizeof entry - (size_t)n, "%02x", key[i]);
	se_recipe_set_base(STATE);
	return 0;
}

static void put_u32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)v;
	p[1] = (unsigned char)(v >> 8);
	p[2] = (unsigned char)(v >> 16);
	p[3] = (unsigned char)(v >> 24);
}

static uint32_t get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* entry_mac is the MAC of the n-byte entry f (recipestore.h). */
static void entry_mac(const unsigned char *f, size_t n, unsigned char out[SE_SHA256_SIZE])
{
	struct se_hmac_sha256 h;
	se_hmac_sha256_init(&h, secret, sizeof secret);
	se_hmac_sha256_update(&h, f, 44);
	se_hmac_sha256_update(&h, f + SE_RECIPE_HEADER, n - SE_RECIPE_HEADER);
	se_hmac_sha256_final(&h, out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	unsigned flags = data[0];
	size_t n = size - 1;
	unsigned char *f = malloc(n ? n : 1);
	CHECK(f != NULL);
	if (n)
		memcpy(f, data + 1, n);
	unsigned char mac[SE_SHA256_SIZE];
	if (n >= SE_RECIPE_HEADER) {
		if (flags & 1)
			put_u32(f + 8, (uint32_t)(n - SE_RECIPE_HEADER));
		if (flags & 2)
			memcpy(f, SE_RECIPE_MAGIC, 8);
		if (flags & 4)
			memcpy(f + 12, key, 32);
		if (flags & 8)
			entry_mac(f, n, f + 44);
	}
	mode_t mode = (flags & 16) ? 0640 : 0600;
	int fd = open(entry, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	CHECK(fd >= 0 && fchmod(fd, mode) == 0);
	CHECK(n == 0 || write(fd, f, n) == (ssize_t)n);
	close(fd);

	/* What the lookup must decide, from the format's description. */
	int want = mode == 0600 && n >= SE_RECIPE_HEADER && n - SE_RECIPE_HEADER <= SE_RECIPE_MAX_BODY &&
		   memcmp(f, SE_RECIPE_MAGIC, 8) == 0 && get_u32(f + 8) == n - SE_RECIPE_HEADER &&
		   memcmp(f + 12, key, 32) == 0;
	if (want) {
		entry_mac(f, n, mac);
		want = memcmp(mac, f + 44, sizeof mac) == 0;
	}
	unsigned char *body = NULL;
	size_t len = 0;
	int got = se_recipe_lookup(key, &body, &len);
	CHECK(got == want);
	if (got) {
		CHECK(body != NULL && len == n - SE_RECIPE_HEADER);
		CHECK(len == 0 || memcmp(body, f + SE_RECIPE_HEADER, len) == 0);
		/* The body's parts, as the warm path splits them: in order,
		 * 8-aligned, within the body and filling it. */
		struct se_stored_parts p;
		if (se_stored_split(body, len, &p)) {
			CHECK(p.deps_off == 16 && p.recipe_off % 8 == 0 && p.record_off % 8 == 0);
			CHECK(p.deps_off + p.deps_len <= p.recipe_off && p.recipe_off + p.recipe_len <= p.record_off);
			CHECK(p.record_off + p.record_len == len);
		}
		free(body);
	}
	free(f);
	return 0;
}
