package main

import (
	"os"
	"testing"
)

// BenchmarkColdDecision is the Go half of a cold run's start-up, in
// process (decide: the policy resolved, the host probed and the run
// prepared), for a workspace_write policy in a fresh directory. Profile
// it with -cpuprofile to see where a cold start spends Go's time.
func BenchmarkColdDecision(b *testing.B) {
	ws := b.TempDir()
	b.Chdir(ws)
	args := []string{"--sandbox-policy-cwd", ws, "--sandbox-policy", `{"type":"workspace_write","writable_roots":[],"network_access":false}`, "--", "/bin/true"}
	for b.Loop() {
		o, err := parseArgs(args)
		if err != nil {
			b.Fatal(err)
		}
		out, err := openOutputs(o)
		if err != nil {
			b.Fatal(err)
		}
		inv := &invocation{o: o, out: out}
		cfg, _, _, err := inv.decide()
		if err != nil {
			b.Fatal(err)
		}
		out.close()
		os.Remove(cfg.TempDir)
	}
}
