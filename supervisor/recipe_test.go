package supervisor

import (
	"bytes"
	"testing"

	"sandbox-executable/runstate"
	"sandbox-executable/spawn"
)

// TestRecipeIsTheDecision: the recipe is a function of the decision alone,
// byte for byte, however often it is made; and every kind of run is one
// (the runner carries out every run).
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
	decide := func(cfg Config) (*spawn.Recipe, []byte) {
		cfg.Plan, cfg.Argv, cfg.Cwd, cfg.TempDir, cfg.RunID = plan, []string{"/bin/true"}, "/", "/tmp", "x"
		facts := f
		pr, err := Prepare(cfg, &facts)
		if err != nil {
			t.Fatal(err)
		}
		r, err := pr.Recipe([spawn.EndingsN]string{})
		if err != nil {
			t.Fatal(err)
		}
		return r, r.Encode()
	}
	var first []byte
	for i := 0; i < 100; i++ {
		_, b := decide(Config{})
		if first == nil {
			first = b
		} else if !bytes.Equal(b, first) {
			t.Fatalf("decision %d laid out another recipe (%d bytes against %d)", i, len(b), len(first))
		}
	}
	if r, _ := decide(Config{LogDenials: true}); !r.GoFromStart || !r.Notify {
		t.Errorf("denials logged: GoFromStart %v, Notify %v", r.GoFromStart, r.Notify)
	}
	if r, _ := decide(Config{KeepFDs: []int{3}}); len(r.KeepFDs) != 1 || r.KeepFDs[0] != 3 {
		t.Errorf("fds kept: %v", r.KeepFDs)
	}
	plan = planFor(t, allowed)
	if r, _ := decide(Config{}); !r.GoFromStart || !r.Proxy {
		t.Errorf("allowlist: GoFromStart %v, Proxy %v", r.GoFromStart, r.Proxy)
	}
}
