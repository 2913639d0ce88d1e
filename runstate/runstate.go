// Package runstate is the helper's private directory for state shared
// between runs: placeholder locks, the compiled-filter cache. It is made on
// first use, per user, and must be private: anything in it is trusted.
package runstate

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// Base overrides the location of the directory (tests).
var Base string

// Dir returns the private subdirectory sub, made if missing: under
// /run/sandbox-executable for root, $XDG_RUNTIME_DIR/sandbox-executable for
// a user who has one, else $TMPDIR/sandbox-executable-<uid>. It refuses a
// directory that is not this user's own or that others can write.
func Dir(sub string) (string, error) {
	base := Base
	switch {
	case base != "":
	case os.Geteuid() == 0:
		base = "/run/sandbox-executable"
	case filepath.IsAbs(os.Getenv("XDG_RUNTIME_DIR")):
		base = filepath.Join(os.Getenv("XDG_RUNTIME_DIR"), "sandbox-executable")
	default:
		base = filepath.Join(os.TempDir(), "sandbox-executable-"+strconv.Itoa(os.Geteuid()))
	}
	dir := filepath.Join(base, sub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("state directory: %w", err)
	}
	for _, d := range []string{base, dir} {
		var st unix.Stat_t
		if err := unix.Lstat(d, &st); err != nil {
			return "", fmt.Errorf("state directory: %w", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFDIR || int(st.Uid) != os.Geteuid() || st.Mode&0o022 != 0 {
			return "", fmt.Errorf("state directory: %s is not a private directory of this user", d)
		}
	}
	return dir, nil
}
