package supervisor

import (
	"testing"

	"sandbox-executable/sockmed"
)

func TestChooseSockets(t *testing.T) {
	if c := chooseSockets(9, false, false, true, true); c.how != socketsByLandlock {
		t.Errorf("ABI 9 without namespaces: %+v", c)
	}
	if c := chooseSockets(7, false, false, true, true); c.how != socketsDenied {
		t.Errorf("no init: %+v", c)
	}
	if c := chooseSockets(7, true, false, false, true); c.how != socketsDenied {
		t.Errorf("an init, but a kernel that cannot mediate: %+v", c)
	}
	for _, c := range []struct {
		abi           int
		netns, scoped bool
		want          sockmed.AbstractMode
	}{
		{7, true, true, sockmed.AbstractDirect}, {5, true, false, sockmed.AbstractDirect},
		{7, false, true, sockmed.AbstractScoped}, {6, false, true, sockmed.AbstractScoped},
		// No domain of the supervisor's (a run without "--"), or a kernel
		// without scoping.
		{7, false, false, sockmed.AbstractHeld}, {5, false, true, sockmed.AbstractHeld}, {5, false, false, sockmed.AbstractHeld},
	} {
		got := chooseSockets(c.abi, true, c.netns, true, c.scoped)
		if got.how != socketsMediated || got.abstract != c.want {
			t.Errorf("ABI %d, netns %v, scoped %v: %+v, want abstract %d", c.abi, c.netns, c.scoped, got, c.want)
		}
	}
}
