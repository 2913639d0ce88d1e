package standalone

import "testing"

// TestGitCommitSetting: allow_git_commit in a settings file and
// --allow-git-commit say the same; false says nothing, and a later source
// overrides an earlier one.
func TestGitCommitSetting(t *testing.T) {
	s, err := parseFile([]byte(`{"allow_git_commit":true}`), "/p/.sandbox.json", "/p")
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Decide()
	if err != nil || d.Changes.GitCommit != "/p/.sandbox.json: allow_git_commit" {
		t.Errorf("from a file: %q %v", d.Changes.GitCommit, err)
	}
	off, err := parseFile([]byte(`{"allow_git_commit":false}`), "/q/.sandbox.json", "/q")
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := s.Merge(off).Decide(); d.Changes.GitCommit != "" {
		t.Errorf("false over true: %q", d.Changes.GitCommit)
	}
	flag := Settings{GitCommit: &Value{Text: "true", From: "--allow-git-commit"}}
	if d, _ := off.Merge(flag).Decide(); d.Changes.GitCommit != "--allow-git-commit" {
		t.Errorf("the flag over a file's false: %q", d.Changes.GitCommit)
	}
	if flag.Empty() || (&Settings{}).Empty() != true {
		t.Error("Empty")
	}
}

// Empty reports whether s sets nothing (the tests' question: the helper
// itself never asks it).
func (s *Settings) Empty() bool {
	return len(s.RW)+len(s.RO)+len(s.Hide)+len(s.Net) == 0 && s.Timeout == nil && s.Memory == nil && s.Pids == nil &&
		s.CPU == nil && s.PersistCache == nil && s.ScratchCaches == nil && s.GitCommit == nil
}
