package doctor

import (
	"strings"
	"testing"
)

func sampleReport() Report {
	return Report{
		Host: Host{Kernel: "6.18.44", Arch: "x86_64", UID: 1000, EUID: 1000, RootFS: "ext4",
			Container: Container{Likely: true, Markers: []string{"/.dockerenv (Docker)"}}},
		Checks: []Item{
			{ID: "landlock", Status: StatusOK, Strict: true, Detail: "ABI 7 (errata 0x3): filesystem, TCP, scoping, audit logging", Notes: []string{"errata fixed: 1, 2"}},
			{ID: "cgroups", Status: StatusMissing, Strict: true, Detail: "hybrid: memory v1 /sys/fs/cgroup/memory", Fix: "run as root"},
			{ID: "userns", Status: StatusDegraded, Detail: "something", Fix: "sysctl -w x=1"},
		},
	}
}

func TestText(t *testing.T) {
	r := sampleReport()
	r.OK = computeOK(r.Checks)
	out := r.Text()
	lines := strings.Split(out, "\n")
	want := []string{
		"host     kernel 6.18.44 (x86_64), uid 1000 euid 1000, no systemd, root fs ext4",
		"         container markers: /.dockerenv (Docker)",
		"",
		"ok       landlock      ABI 7 (errata 0x3): filesystem, TCP, scoping, audit logging",
		"                       errata fixed: 1, 2",
		"missing  cgroups       hybrid: memory v1 /sys/fs/cgroup/memory",
		"         fix: run as root",
		"degraded userns        something",
		"         fix: sysctl -w x=1",
		"",
		"not available here: cgroups (see fix: above)",
		"",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Errorf("Text() =\n%s\nwant\n%s", out, strings.Join(want, "\n"))
	}
	if strings.Contains(out, "\x1b") {
		t.Error("colour without Options.Color")
	}

	r.color = true
	colored := r.Text()
	if !strings.Contains(colored, "\x1b[31mmissing\x1b[0m  cgroups       hybrid") || !strings.Contains(colored, "\x1b[32mok\x1b[0m       landlock") {
		t.Errorf("coloured text misaligned or uncoloured:\n%q", colored)
	}

	r = sampleReport()
	r.Checks = r.Checks[:1]
	r.OK = computeOK(r.Checks)
	if !strings.HasSuffix(r.Text(), "\nevery part of the strict model is available\n") {
		t.Errorf("verdict:\n%s", r.Text())
	}
}
