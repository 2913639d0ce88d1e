package spawn

/*
#include <stdlib.h>
#include "sha256.h"

// se_sha256_steps hashes msg fed to se_sha256_update in pieces of step
// bytes (the last one shorter).
static void se_sha256_steps(const unsigned char *msg, size_t len, size_t step, unsigned char *out)
{
	struct se_sha256 c;
	se_sha256_init(&c);
	for (size_t off = 0; off < len; off += step)
		se_sha256_update(&c, msg + off, len - off < step ? len - off : step);
	se_sha256_final(&c, out);
}
*/
import "C"

import "unsafe"

// The C SHA-256 and HMAC for the tests, which cannot use cgo themselves.

// sha256C is the C SHA-256 of msg, given to the incremental update in
// pieces of step bytes.
func sha256C(msg []byte, step int) (sum [32]byte) {
	C.se_sha256_steps(cBytes(msg), C.size_t(len(msg)), C.size_t(max(step, 1)), (*C.uchar)(&sum[0]))
	return sum
}

// hmacC is the C HMAC-SHA256 of msg under key.
func hmacC(key, msg []byte) (mac [32]byte) {
	C.se_hmac_sha256(unsafe.Pointer(cBytes(key)), C.size_t(len(key)), unsafe.Pointer(cBytes(msg)), C.size_t(len(msg)), (*C.uchar)(&mac[0]))
	return mac
}

// ctEqualC is the C constant-time comparison.
func ctEqualC(a, b []byte) bool {
	return C.se_ct_equal(unsafe.Pointer(cBytes(a)), unsafe.Pointer(cBytes(b)), C.size_t(min(len(a), len(b)))) == 1
}

// cBytes points at b's first byte, or is nil for an empty b.
func cBytes(b []byte) *C.uchar {
	if len(b) == 0 {
		return nil
	}
	return (*C.uchar)(&b[0])
}
