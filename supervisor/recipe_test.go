package supervisor

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"sandbox-executable/runstate"
)

// TestRecipeIsTheDecision: the recipe is a function of the decision alone,
// byte for byte, however often it is made (a run the warm path handed
// over is adopted only when deciding again gives the recipe it ran); and a
// run that needs Go from its start is not one.
func TestRecipeIsTheDecision(t *testing.T) {
	runstate.Base = t.TempDir()
	defer func() { runstate.Base = "" }()
	const (
		ws      = `{"type":"workspace_write","writable_roots":[],"network_access":false}`
		allowed = `{"type":"workspace_write","writable_roots":[],"network_access":true,"network_allowlist":[{"domain":"example.com","port":443,"protocol":"tcp"}],"seccomp_profile":{"allow_network_sockets":true}}`
	)
	f := rootHost
	f.SharedTmp = "/tmp/sandbox-executable-tmp-uid0"
	plan := planFor(t, ws)
	decide := func(cfg Config) ([]byte, error) {
		cfg.Plan, cfg.Argv, cfg.Cwd, cfg.TempDir, cfg.RunID = plan, []string{"/bin/true"}, "/", "/tmp", "x"
		facts := f
		pr, err := Prepare(cfg, &facts)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pr.Recipe()
		if err != nil {
			return nil, err
		}
		return r.Encode(), nil
	}
	var first []byte
	for i := 0; i < 100; i++ {
		b, err := decide(Config{})
		if err != nil {
			t.Fatalf("not a recipe: %v", err)
		}
		if first == nil {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("decision %d laid out another recipe (%d bytes against %d)", i, len(b), len(first))
		}
	}
	for name, cfg := range map[string]Config{
		"denials logged": {LogDenials: true},
		"fds kept":       {KeepFDs: []int{3}},
		"cgroup parent":  {CgroupParent: "/x"},
	} {
		var nr *NotARecipeError
		if _, err := decide(cfg); !errors.As(err, &nr) {
			t.Errorf("%s: a recipe (%v)", name, err)
		}
	}
	plan = planFor(t, allowed)
	var nr *NotARecipeError
	if _, err := decide(Config{}); !errors.As(err, &nr) || !strings.Contains(nr.Why, "proxy") {
		t.Errorf("allowlist: %v, want the proxy's refusal", err)
	}
}
