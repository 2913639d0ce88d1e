package main

import (
	"strings"
	"testing"

	"sandbox-executable/policy"
	"sandbox-executable/standalone"
)

// TestGitCommitRefusedWithAPolicy: --allow-git-commit widens what a policy
// says (its .git becomes writable), so with --sandbox-policy it is refused
// in one line naming it; VT Code's calls stay exact.
func TestGitCommitRefusedWithAPolicy(t *testing.T) {
	o, err := parseArgs([]string{"--allow-git-commit", "--sandbox-policy", `{"type":"read_only"}`, "--", "true"})
	if err != nil || !o.gitCommit {
		t.Fatalf("parse: %+v %v", o, err)
	}
	s := flagSettings(o, "/w")
	d, err := s.Decide()
	if err != nil {
		t.Fatal(err)
	}
	err = onlyNarrowing(d, &policy.SandboxPolicy{Kind: policy.KindReadOnly})
	if err == nil || !strings.HasPrefix(err.Error(), "--allow-git-commit: would make the repository's .git writable;") || strings.Contains(err.Error(), "\n") {
		t.Errorf("with a policy: %v", err)
	}
	if err := onlyNarrowing(&standalone.Decided{}, &policy.SandboxPolicy{Kind: policy.KindReadOnly}); err != nil {
		t.Errorf("without the flag: %v", err)
	}
}
