package mountns

import (
	"strings"
	"testing"
)

// TestAppArmorFix: where Ubuntu's AppArmor restricts user namespaces, the
// remedy names the shipped profile and this binary's own path when no
// profile attaches to it, and the profile's name when one does without
// userns.
func TestAppArmorFix(t *testing.T) {
	for _, c := range []struct{ label, exe, want string }{
		{"unconfined", "/home/u/bin/sandbox-executable", "packaging/apparmor/sandbox-executable) with this binary's path, /home/u/bin/sandbox-executable,"},
		{"", "/opt/se/sandbox-executable", "/opt/se/sandbox-executable"},
		{"sandbox-executable (enforce)", "/usr/bin/sandbox-executable", "the AppArmor profile sandbox-executable (enforce) does not allow userns"},
	} {
		if got := apparmorFix(c.label, c.exe); !strings.Contains(got, c.want) {
			t.Errorf("apparmorFix(%q, %q) = %q, want %q in it", c.label, c.exe, got, c.want)
		}
	}
}
