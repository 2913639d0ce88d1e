package fsmed

import "sandbox-executable/seccomp"

// legacy: arm64 has only the *at calls.
func legacy(*seccomp.Call) (call, bool) { return call{}, false }
