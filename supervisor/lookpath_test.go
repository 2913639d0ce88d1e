package supervisor

import (
	"reflect"
	"testing"
)

func TestExecCandidates(t *testing.T) {
	for _, c := range []struct {
		name string
		env  []string
		want []string
	}{
		{"ls", []string{"PATH=/usr/bin:/bin"}, []string{"/usr/bin/ls", "/bin/ls"}},
		{"ls", []string{"PATH=/a::/b"}, []string{"/a/ls", "ls", "/b/ls"}},
		{"ls", []string{"PATH=/:/usr/bin/:./x"}, []string{"/ls", "/usr/bin/ls", "x/ls"}},
		{"ls", nil, []string{"/bin/ls", "/usr/bin/ls"}},
		{"ls", []string{"PATH=/first", "PATH=/second"}, []string{"/first/ls"}},
		{"./x", []string{"PATH=/usr/bin"}, []string{"./x"}},
		{"/bin/sh", nil, []string{"/bin/sh"}},
		{"", []string{"PATH=/bin"}, nil},
	} {
		if got := execCandidates(c.name, c.env); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%q %v: %v, want %v", c.name, c.env, got, c.want)
		}
	}
}
