// Package testcap is how a test skips for a capability the host lacks: root,
// Landlock, a cgroup hierarchy, namespaces, something installed. Where CI
// expects the capability, the environment variable SE_STRICT names it and
// the skip becomes a failure, so that a run which lost root, a kernel
// feature or a package fails instead of passing by skipping what it was
// meant to test.
//
// A skip that is not about a capability (-short, a helper process run by
// its parent, a test for another kind of host, such as a kernel without
// Landlock) stays a plain t.Skip.
package testcap

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// Env is the variable that names the capabilities expected here: a
// comma-separated list of Capability names, or "1" for all of them. Unset
// or empty, every capability skip is a skip.
const Env = "SE_STRICT"

// A Capability is something of the host's that a test needs.
type Capability string

// The capabilities.
const (
	// Root is an effective uid of 0.
	Root Capability = "root"
	// Landlock is the kernel's Landlock LSM, any ABI.
	Landlock Capability = "landlock"
	// Cgroups is a cgroup hierarchy that a test may make groups in.
	Cgroups Capability = "cgroups"
	// UnifiedCgroup is cgroup v2 alone, with memory and pids enabled at
	// its root.
	UnifiedCgroup Capability = "unified-cgroup"
	// Namespaces are the user, mount, PID and network namespaces.
	Namespaces Capability = "namespaces"
	// Installed is a program that .ci/install-deps installs, or a file
	// that CI lays beside the checkout (shared/).
	Installed Capability = "installed"
	// AppArmorUserns is AppArmor's mediation of user namespaces with
	// Ubuntu's switch for restricting them
	// (kernel.apparmor_restrict_unprivileged_userns): an Ubuntu kernel,
	// such as the ubuntu-6.8 VM guest's.
	AppArmorUserns Capability = "apparmor-userns"
)

var all = []Capability{Root, Landlock, Cgroups, UnifiedCgroup, Namespaces, Installed, AppArmorUserns}

// Skipf skips t for want of c, saying why with format and args; where
// SE_STRICT expects c, it fails t instead.
func Skipf(t testing.TB, c Capability, format string, args ...any) {
	t.Helper()
	why := fmt.Sprintf(format, args...)
	expected, err := Expected(c)
	if err != nil {
		t.Fatalf("%v (skipping: %s)", err, why)
	}
	if expected {
		t.Fatalf("%s=%s expects %s here, but: %s", Env, os.Getenv(Env), c, why)
	}
	t.Skip(why)
}

// Expected reports whether SE_STRICT expects c; an error when it names a
// capability there is none of (a typo would quietly let skips pass).
func Expected(c Capability) (bool, error) {
	v := strings.TrimSpace(os.Getenv(Env))
	if v == "" {
		return false, nil
	}
	if v == "1" {
		return true, nil
	}
	found := false
	for name := range strings.SplitSeq(v, ",") {
		name = strings.TrimSpace(name)
		known := false
		for _, k := range all {
			known = known || Capability(name) == k
		}
		if !known {
			return false, fmt.Errorf("%s=%s: no capability %q (known: %v)", Env, v, name, all)
		}
		found = found || Capability(name) == c
	}
	return found, nil
}
