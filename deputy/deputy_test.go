package deputy

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestAsProgram: the call runs without an effective capability, and the
// thread has them back after.
func TestAsProgram(t *testing.T) {
	effective := func() uint32 {
		hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
		var d [2]unix.CapUserData
		if err := unix.Capget(&hdr, &d[0]); err != nil {
			t.Fatal(err)
		}
		return d[0].Effective | d[1].Effective
	}
	before := effective()
	var during uint32
	if !AsProgram(func() { during = effective() }) {
		t.Fatal("AsProgram refused")
	}
	if during != 0 {
		t.Errorf("effective capabilities during the call: %#x", during)
	}
	if after := effective(); after != before {
		t.Errorf("after: %#x, before: %#x", after, before)
	}
}
