package supervisor

import (
	"strings"
	"testing"

	"sandbox-executable/policy"
)

func TestPrivateTmpSize(t *testing.T) {
	for _, c := range []struct {
		lim  policy.Limits
		want uint64
		why  string
	}{
		{policy.Limits{FileSizeBytes: 1 << 20, MemoryBytes: 512 << 20}, 1 << 20, "max_disk_mb"},
		{policy.Limits{FileSizeBytes: 4 << 30}, 4 << 30, "max_disk_mb"},
		{policy.Limits{MemoryBytes: 256 << 20}, 256 << 20, "memory limit"},
		{policy.Limits{MemoryBytes: 8 << 30}, defaultTmpBytes, "default"},
		{policy.Limits{}, defaultTmpBytes, "default"},
	} {
		got, why := privateTmpSize(c.lim)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%+v: %d (%s), want %d (%s)", c.lim, got, why, c.want, c.why)
		}
	}
}
