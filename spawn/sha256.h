/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), for code that runs in a
 * constructor before the Go runtime starts (the recipe key and the lookup
 * of an authenticated recipe). Plain C: no allocation, no system calls, no
 * global state; nothing here may run in the spawn stage's child, which
 * needs none of it.
 */
#ifndef SE_SHA256_H
#define SE_SHA256_H

#include <stddef.h>
#include <stdint.h>

#define SE_SHA256_SIZE 32
#define SE_SHA256_BLOCK 64

struct se_sha256 {
	uint32_t h[8];
	uint64_t len;                         /* bytes hashed so far */
	unsigned char buf[SE_SHA256_BLOCK];   /* a partial block */
	size_t n;                             /* bytes in buf */
};

void se_sha256_init(struct se_sha256 *c);
void se_sha256_update(struct se_sha256 *c, const void *data, size_t len);
/* se_sha256_final writes the digest; c must be initialized again before
 * another use. */
void se_sha256_final(struct se_sha256 *c, unsigned char out[SE_SHA256_SIZE]);

/* HMAC-SHA256, incrementally: the inner hash already holds key^ipad and
 * okey is key^opad, for the outer hash at the end. */
struct se_hmac_sha256 {
	struct se_sha256 inner;
	unsigned char okey[SE_SHA256_BLOCK];
};

void se_hmac_sha256_init(struct se_hmac_sha256 *c, const void *key, size_t keylen);
void se_hmac_sha256_update(struct se_hmac_sha256 *c, const void *data, size_t len);
/* se_hmac_sha256_final writes the MAC and wipes the key material in c. */
void se_hmac_sha256_final(struct se_hmac_sha256 *c, unsigned char out[SE_SHA256_SIZE]);

/* se_hmac_sha256 is HMAC-SHA256(key, msg) in one call. */
void se_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
		    unsigned char out[SE_SHA256_SIZE]);

/* se_ct_equal reports whether the n bytes at a and b are equal (1) or not
 * (0), in a time that depends on n alone. */
int se_ct_equal(const void *a, const void *b, size_t n);

/* se_wipe zeroes n bytes at p in a way the compiler keeps. */
void se_wipe(void *p, size_t n);

#endif
