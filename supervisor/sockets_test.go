package supervisor

import (
	"testing"

	"sandbox-executable/sockmed"
)

func TestChooseSockets(t *testing.T) {
	if c := chooseSockets(9, false, false, true); c.how != socketsByLandlock {
		t.Errorf("ABI 9 without namespaces: %+v", c)
	}
	if c := chooseSockets(7, false, false, true); c.how != socketsDenied {
		t.Errorf("no init: %+v", c)
	}
	if c := chooseSockets(7, true, false, false); c.how != socketsDenied {
		t.Errorf("an init, but a kernel that cannot mediate: %+v", c)
	}
	for _, c := range []struct {
		abi   int
		netns bool
		want  sockmed.AbstractMode
	}{
		{7, true, sockmed.AbstractDirect}, {5, true, sockmed.AbstractDirect},
		// The host's network namespace: held, whatever the kernel.
		{7, false, sockmed.AbstractHeld}, {5, false, sockmed.AbstractHeld},
	} {
		got := chooseSockets(c.abi, true, c.netns, true)
		if got.how != socketsMediated || got.abstract != c.want {
			t.Errorf("ABI %d, netns %v: %+v, want abstract %d", c.abi, c.netns, got, c.want)
		}
	}
}
