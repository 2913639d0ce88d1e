/*
 * SHA-256 as FIPS 180-4 specifies it (sections 4.1.2, 4.2.2, 5.1.1, 5.3.3
 * and 6.2) and HMAC as RFC 2104 does, written for this project. See
 * sha256.h.
 */
#include "sha256.h"

#include <string.h>

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static const uint32_t se_sha256_k[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

#define ROTR(x, n) (((x) >> (n)) | ((x) << (32 - (n))))
#define CH(x, y, z) (((x) & (y)) ^ (~(x) & (z)))
#define MAJ(x, y, z) (((x) & (y)) ^ ((x) & (z)) ^ ((y) & (z)))
#define BSIG0(x) (ROTR(x, 2) ^ ROTR(x, 13) ^ ROTR(x, 22))
#define BSIG1(x) (ROTR(x, 6) ^ ROTR(x, 11) ^ ROTR(x, 25))
#define SSIG0(x) (ROTR(x, 7) ^ ROTR(x, 18) ^ ((x) >> 3))
#define SSIG1(x) (ROTR(x, 17) ^ ROTR(x, 19) ^ ((x) >> 10))

static inline uint32_t se_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static inline void se_put_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* FIPS 180-4 6.2.2: the computation for n whole blocks. */
static void se_sha256_blocks(uint32_t h[8], const unsigned char *p, size_t n)
{
	uint32_t w[64];

	for (; n > 0; n--, p += SE_SHA256_BLOCK) {
		for (int t = 0; t < 16; t++)
			w[t] = se_be32(p + 4 * t);
		for (int t = 16; t < 64; t++)
			w[t] = SSIG1(w[t - 2]) + w[t - 7] + SSIG0(w[t - 15]) + w[t - 16];
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
		uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];
		for (int t = 0; t < 64; t++) {
			uint32_t t1 = hh + BSIG1(e) + CH(e, f, g) + se_sha256_k[t] + w[t];
			uint32_t t2 = BSIG0(a) + MAJ(a, b, c);
			hh = g;
			g = f;
			f = e;
			e = d + t1;
			d = c;
			c = b;
			b = a;
			a = t1 + t2;
		}
		h[0] += a;
		h[1] += b;
		h[2] += c;
		h[3] += d;
		h[4] += e;
		h[5] += f;
		h[6] += g;
		h[7] += hh;
	}
}

void se_sha256_init(struct se_sha256 *c)
{
	/* FIPS 180-4 5.3.3: the first 32 bits of the fractional parts of the
	 * square roots of the first 8 primes. */
	static const uint32_t h0[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};
	memcpy(c->h, h0, sizeof h0);
	c->len = 0;
	c->n = 0;
}

void se_sha256_update(struct se_sha256 *c, const void *data, size_t len)
{
	const unsigned char *p = data;

	if (len == 0)
		return;
	c->len += len;
	if (c->n > 0) {
		size_t take = SE_SHA256_BLOCK - c->n;
		if (take > len)
			take = len;
		memcpy(c->buf + c->n, p, take);
		c->n += take;
		p += take;
		len -= take;
		if (c->n < SE_SHA256_BLOCK)
			return;
		se_sha256_blocks(c->h, c->buf, 1);
		c->n = 0;
	}
	if (len >= SE_SHA256_BLOCK) {
		size_t whole = len / SE_SHA256_BLOCK;
		se_sha256_blocks(c->h, p, whole);
		p += whole * SE_SHA256_BLOCK;
		len -= whole * SE_SHA256_BLOCK;
	}
	if (len > 0) {
		memcpy(c->buf, p, len);
		c->n = len;
	}
}

void se_sha256_final(struct se_sha256 *c, unsigned char out[SE_SHA256_SIZE])
{
	/* FIPS 180-4 5.1.1: a 1 bit, zeros up to 56 mod 64 bytes, then the
	 * message's length in bits as a 64-bit big-endian number. */
	uint64_t bits = c->len * 8;
	unsigned char pad[SE_SHA256_BLOCK + 8] = {0x80};
	size_t padlen = (c->n < 56 ? 56 : 120) - c->n;
	se_put_be32(pad + padlen, (uint32_t)(bits >> 32));
	se_put_be32(pad + padlen + 4, (uint32_t)bits);
	se_sha256_update(c, pad, padlen + 8);
	for (int i = 0; i < 8; i++)
		se_put_be32(out + 4 * i, c->h[i]);
	se_wipe(c, sizeof *c);
}

/* RFC 2104: H(K ^ opad, H(K ^ ipad, text)), with a key longer than a block
 * replaced by its hash and a shorter one padded with zeros. */
void se_hmac_sha256_init(struct se_hmac_sha256 *c, const void *key, size_t keylen)
{
	unsigned char k[SE_SHA256_BLOCK] = {0};
	unsigned char ikey[SE_SHA256_BLOCK];

	if (keylen > SE_SHA256_BLOCK) {
		se_sha256_init(&c->inner);
		se_sha256_update(&c->inner, key, keylen);
		se_sha256_final(&c->inner, k);
	} else if (keylen > 0) {
		memcpy(k, key, keylen);
	}
	for (int i = 0; i < SE_SHA256_BLOCK; i++) {
		ikey[i] = k[i] ^ 0x36;
		c->okey[i] = k[i] ^ 0x5c;
	}
	se_sha256_init(&c->inner);
	se_sha256_update(&c->inner, ikey, sizeof ikey);
	se_wipe(k, sizeof k);
	se_wipe(ikey, sizeof ikey);
}

void se_hmac_sha256_update(struct se_hmac_sha256 *c, const void *data, size_t len)
{
	se_sha256_update(&c->inner, data, len);
}

void se_hmac_sha256_final(struct se_hmac_sha256 *c, unsigned char out[SE_SHA256_SIZE])
{
	unsigned char ih[SE_SHA256_SIZE];
	struct se_sha256 outer;

	se_sha256_final(&c->inner, ih);
	se_sha256_init(&outer);
	se_sha256_update(&outer, c->okey, sizeof c->okey);
	se_sha256_update(&outer, ih, sizeof ih);
	se_sha256_final(&outer, out);
	se_wipe(ih, sizeof ih);
	se_wipe(c, sizeof *c);
}

void se_hmac_sha256(const void *key, size_t keylen, const void *msg, size_t msglen,
		    unsigned char out[SE_SHA256_SIZE])
{
	struct se_hmac_sha256 c;

	se_hmac_sha256_init(&c, key, keylen);
	se_hmac_sha256_update(&c, msg, msglen);
	se_hmac_sha256_final(&c, out);
}

int se_ct_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned int d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	/* d is 0..255: (d - 1) >> 8 has its low bit set only for d == 0. */
	return (int)(((d - 1) >> 8) & 1);
}

void se_wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n--)
		*v++ = 0;
}
