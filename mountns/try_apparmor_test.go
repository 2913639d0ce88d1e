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
		{"unconfined", "/home/u/bin/sandbox-executable", "packaging/apparmor/sandbox-executable in /etc/apparmor.d with this binary's path, /home/u/bin/sandbox-executable,"},
		{"", "/opt/se/sandbox-executable", "/opt/se/sandbox-executable"},
		{"", "", "with the installed binary's path in its attachment, and load it"},
		{"sandbox-executable (enforce)", "/usr/bin/sandbox-executable", "the AppArmor profile sandbox-executable (enforce) does not allow userns"},
	} {
		if got := AppArmorFix(c.label, c.exe); !strings.Contains(got, c.want) {
			t.Errorf("AppArmorFix(%q, %q) = %q, want %q in it", c.label, c.exe, got, c.want)
		}
	}
}
