package integration

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestFirstScreenCommand runs the README's first-screen command, from
// "./bin/sandbox-executable" on, verbatim but for the binary's path, in a
// fresh directory: it ends with exit 2 and the shell's "Read-only file
// system" line, which the README says is the sandbox at work, and
// hello.txt is written.
func TestFirstScreenCommand(t *testing.T) {
	_, file, _, _ := runtime.Caller(0)
	readme, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	const lead = "make build && ./bin/sandbox-executable "
	var cmdline string
	for _, l := range strings.Split(string(readme), "\n") {
		if i := strings.Index(l, lead); i >= 0 && strings.HasPrefix(strings.TrimSpace(l), "export PATH=") {
			cmdline = "\"$SE_BINARY\" " + l[i+len(lead):]
			break
		}
	}
	if cmdline == "" {
		t.Fatal("no first-screen command in README.md")
	}
	if !strings.Contains(string(readme), "exit status 2: that is the\nsandbox at work") {
		t.Error("README.md no longer says that the first-screen command's exit 2 is the sandbox at work")
	}
	dir := t.TempDir()
	cmd := exec.Command("/bin/sh", "-c", cmdline)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "SE_BINARY="+binary, "PWD="+dir)
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != 2 || !strings.Contains(string(out), "cannot create /etc/hostname: Read-only file system") {
		t.Errorf("exit %d, output %q: want 2 and the shell's read-only line", code, out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "hello.txt")); string(b) != "written\n" {
		t.Errorf("hello.txt holds %q, want the line the command wrote", b)
	}
}

// TestHelpListsEveryExitStatus: --help names 137 and 152 besides the rest.
func TestHelpListsEveryExitStatus(t *testing.T) {
	r := run(t, runOpts{}, "--help")
	for _, code := range []string{"124", "125", "126", "127", "128+N", "137", "152"} {
		if !strings.Contains(r.stdout, code) {
			t.Errorf("--help does not mention %s", code)
		}
	}
}
