package policy

import "testing"

func TestBeneath(t *testing.T) {
	for _, c := range []struct {
		p, dir          string
		beneath, within bool
	}{
		{"/a/b", "/a", true, true},
		{"/a", "/a", false, true},
		{"/ab", "/a", false, false},
		{"/a", "/", true, true},
		{"/", "/", false, true},
		{"/a/b/c", "/a/b", true, true},
		{"/a", "/a/b", false, false},
	} {
		if Beneath(c.p, c.dir) != c.beneath || Within(c.p, c.dir) != c.within {
			t.Errorf("%s in %s: beneath %v within %v", c.p, c.dir, Beneath(c.p, c.dir), Within(c.p, c.dir))
		}
	}
}
