package testcap

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

func TestExpected(t *testing.T) {
	cases := []struct {
		env  string
		c    Capability
		want bool
		err  bool
	}{
		{"", Root, false, false},
		{"1", UnifiedCgroup, true, false},
		{"root,landlock", Landlock, true, false},
		{" root , cgroups ", Cgroups, true, false},
		{"root,landlock", Cgroups, false, false},
		{"root,landlok", Root, false, true},
	}
	for _, c := range cases {
		t.Setenv(Env, c.env)
		got, err := Expected(c.c)
		if got != c.want || (err != nil) != c.err {
			t.Errorf("%s=%q, %s: %v %v, want %v (error %v)", Env, c.env, c.c, got, err, c.want, c.err)
		}
	}
}

// TestSkipfFailsWhereExpected: the same skip is a skip without SE_STRICT
// and a failure where SE_STRICT expects the capability (run in a child,
// since a failure is what it checks).
func TestSkipfFailsWhereExpected(t *testing.T) {
	for _, c := range []struct {
		strict string
		fails  bool
		says   string
	}{
		{"", false, "--- SKIP: TestSkipfChild"},
		{"landlock", false, "--- SKIP: TestSkipfChild"},
		{"landlock,root", true, "SE_STRICT=landlock,root expects root here, but: needs root, for the test"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestSkipfChild$", "-test.v")
		cmd.Env = append(os.Environ(), "SE_TESTCAP_CHILD=1", Env+"="+c.strict)
		out, err := cmd.CombinedOutput()
		if (err != nil) != c.fails || !strings.Contains(string(out), c.says) {
			t.Errorf("%s=%q: %v, want failure %v saying %q:\n%s", Env, c.strict, err, c.fails, c.says, out)
		}
	}
}

func TestSkipfChild(t *testing.T) {
	if os.Getenv("SE_TESTCAP_CHILD") != "1" {
		t.Skip("run by TestSkipfFailsWhereExpected")
	}
	Skipf(t, Root, "needs root, %s", "for the test")
}
