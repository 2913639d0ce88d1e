package doctor

import (
	"strings"
	"testing"

	"sandbox-executable/auditlog"
)

// The landlock item says whether a run's file denials can be observed,
// and what closes the gap.
func TestFileDenialsNote(t *testing.T) {
	for _, c := range []struct {
		f    landlockFacts
		want string
	}{
		{landlockFacts{abi: 7}, "CAP_AUDIT_READ"},
		{landlockFacts{abi: 7, auditRead: true, auditErr: "audit status: operation not permitted"}, "could not be asked"},
		{landlockFacts{abi: 7, auditRead: true, audit: &auditlog.Status{}}, "auditctl -e 1"},
		{landlockFacts{abi: 7, auditRead: true, audit: &auditlog.Status{Enabled: 1}}, "observed: the kernel's audit is on"},
	} {
		if got := fileDenialsNote(c.f); !strings.Contains(got, c.want) {
			t.Errorf("%+v: %q, want %q in it", c.f, got, c.want)
		}
	}
	it := landlockItem(landlockFacts{abi: 6}, Host{})
	if strings.Contains(strings.Join(it.Notes, "\n"), "file denials") {
		t.Errorf("ABI 6 has no audit records, yet: %v", it.Notes)
	}
}
