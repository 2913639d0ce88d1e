package integration

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"sandbox-executable/internal/testcap"
)

// Ubuntu's restriction of unprivileged user namespaces, reproduced in the
// ubuntu-6.8 VM guest (make vm-test-ubuntu): Ubuntu 24.04's kernel, with
// what Ubuntu's userland sets at boot (the sysctl from its apparmor
// package's 10-apparmor.conf, its unprivileged_userns profile), loaded by
// an AppArmor 4 parser (integration/vm/setup.sh --apparmor passes them in
// SE_APPARMOR_PARSER, SE_APPARMOR_BASE and SE_APPARMOR_UBUNTU).

const aaRestrictSysctl = "/proc/sys/kernel/apparmor_restrict_unprivileged_userns"

// aaPackagedPath is where the packaged profile's attachment
// (/usr{,/local}/bin/sandbox-executable) covers the binary. The guest
// overlays /usr/local/bin (SE_VM_WRITABLE) so that the test can put the
// binary there.
const aaPackagedPath = "/usr/local/bin/sandbox-executable"

// aaSetup applies Ubuntu's AppArmor defaults in the guest and returns a
// function that loads (apparmor_parser -r) a profile file; everything is
// undone when t ends.
func aaSetup(t *testing.T) (load func(profile string)) {
	t.Helper()
	// It changes the kernel's AppArmor policy: only in a throwaway guest.
	if _, err := os.Stat("/run/se-vm/init"); err != nil || os.Getenv("SE_VM_GUEST") != "1" {
		t.Skip("changes the kernel's AppArmor policy: only in a VM guest (make vm-test-ubuntu)")
	}
	if _, err := os.Stat(aaRestrictSysctl); err != nil {
		testcap.Skipf(t, testcap.AppArmorUserns, "no %s: not Ubuntu's kernel (make vm-test-ubuntu boots one)", aaRestrictSysctl)
	}
	isoNeedRoot(t)
	parser, base, ubuntu := os.Getenv("SE_APPARMOR_PARSER"), os.Getenv("SE_APPARMOR_BASE"), os.Getenv("SE_APPARMOR_UBUNTU")
	if parser == "" || base == "" || ubuntu == "" {
		testcap.Skipf(t, testcap.Installed, "SE_APPARMOR_PARSER, SE_APPARMOR_BASE and SE_APPARMOR_UBUNTU unset (integration/vm/setup.sh --apparmor; make vm-test-ubuntu sets them)")
	}
	// An empty parser.conf: nothing of the host's /etc/apparmor applies.
	conf := filepath.Join(t.TempDir(), "parser.conf")
	write(t, conf, "")
	var loaded []string
	load = func(profile string) {
		t.Helper()
		out, err := exec.Command(parser, "--config-file="+conf, "-b", base, "-r", profile).CombinedOutput()
		if err != nil {
			t.Fatalf("apparmor_parser -r %s: %v\n%s", profile, err, out)
		}
		loaded = append(loaded, profile)
	}
	old, err := os.ReadFile(aaRestrictSysctl)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, p := range loaded {
			_ = exec.Command(parser, "--config-file="+conf, "-b", base, "-R", p).Run()
		}
		_ = os.WriteFile(aaRestrictSysctl, old, 0o644)
	})
	// Ubuntu's sysctl.d line, as systemd-sysctl applies it at boot.
	conf10 := readFile(t, filepath.Join(ubuntu, "usr/lib/sysctl.d/10-apparmor.conf"))
	m := regexp.MustCompile(`(?m)^kernel\.apparmor_restrict_unprivileged_userns\s*=\s*(\d+)\s*$`).FindStringSubmatch(conf10)
	if m == nil || m[1] != "1" {
		t.Fatalf("Ubuntu's 10-apparmor.conf does not set the restriction to 1:\n%s", conf10)
	}
	if err := os.WriteFile(aaRestrictSysctl, []byte(m[1]+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	load(filepath.Join(ubuntu, "etc/apparmor.d/unprivileged_userns"))
	return load
}

// aaLimits are limits without a cgroup: nobody has no delegated one in the
// guest (no systemd), and the restriction is what is tested here.
const aaLimits = `{"max_memory_mb":0,"max_pids":0,"max_disk_mb":0,"cpu_time_secs":0,"timeout_secs":60}`

// aaRefusal is the refusal under the restriction for a binary at path that
// no profile covers: one line naming the packaged profile and the path.
func aaRefusal(path string) string {
	return `^sandbox-executable: refusing to run: no namespaces: .*\(AppArmor restricts unprivileged user namespaces\); ` +
		`install packaging/apparmor/sandbox-executable in /etc/apparmor.d with this binary's path, ` +
		regexp.QuoteMeta(path) + `, in its attachment, and load it .*, or pass --allow-degraded for Landlock-only mode$`
}

// aaDoctor runs doctor --json as nobody with bin and returns its checks by id.
func aaDoctor(t *testing.T, w *workspace, bin string) map[string]struct{ Status, Detail, Fix string } {
	t.Helper()
	r := run(t, runOpts{env: isoEnv(w), dir: w.root, cred: isoNobody.cred, bin: bin}, "doctor", "--json")
	var rep struct {
		Checks []struct {
			ID, Status, Detail, Fix string
			Notes                   []string
		} `json:"checks"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("doctor --json: %v: %v", err, r)
	}
	out := map[string]struct{ Status, Detail, Fix string }{}
	for _, c := range rep.Checks {
		out[c.ID] = struct{ Status, Detail, Fix string }{c.Status, c.Detail + " " + strings.Join(c.Notes, " "), c.Fix}
	}
	return out
}

// TestUbuntuAppArmorUserns: under Ubuntu 24.04's restriction, as nobody,
// (a) a binary no profile covers is refused with one line naming the
// packaged profile and its path, doctor says so, and --allow-degraded runs
// it in Landlock-only mode and reports that; (b) with the packaged profile
// (packaging/apparmor/sandbox-executable, unchanged) loaded and the binary
// at the path it names, the full model: exact mode, its own namespaces, a
// write outside the root refused, a secret unreadable, and the profile's
// userns grant of no use to the program; (c) with that profile loaded, a
// binary at a path it does not cover is still refused, by its path.
func TestUbuntuAppArmorUserns(t *testing.T) {
	load := aaSetup(t)
	w := isoWorkspace(t, isoNobody)
	sub := filepath.Join(w.root, "sub")
	mustMkdir(t, sub)
	_ = os.Chown(sub, 65534, 65534)
	inside, outside := filepath.Join(sub, "written"), filepath.Join(w.out, "written")
	secret := filepath.Join(w.home, ".ssh", "id_rsa")
	script := `echo in > "$1" || exit 90; echo out > "$2" && exit 91; cat "$3" && exit 92; exit 7`
	// as runs the script under the workspace policy as nobody with bin;
	// the report goes beside the outside file (nobody's directory).
	runs := 0
	as := func(bin string, opts ...string) (result, string) {
		t.Helper()
		_ = os.Remove(inside)
		runs++
		rep := filepath.Join(w.out, fmt.Sprintf("report-%d.json", runs))
		args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root),
			"--resource-limits", aaLimits, "--report-file", rep}, opts...)
		args = append(args, "--", "/bin/sh", "-c", script, "sh", inside, outside, secret)
		r := run(t, runOpts{env: isoEnv(w), dir: w.root, cred: isoNobody.cred, bin: bin}, args...)
		if _, err := os.Stat(outside); err == nil {
			t.Fatalf("the write outside the root landed: %v", r)
		}
		return r, rep
	}

	// refused: a run of binary is refused with the line that names its
	// path, and nothing of the program ran.
	refused := func(t *testing.T) {
		r, _ := as(binary)
		t.Logf("refusal: %s", strings.TrimSpace(r.stderr))
		ctrCheckRefusal(t, r, aaRefusal(binary))
		if _, err := os.Stat(inside); err == nil {
			t.Errorf("refused, yet the program ran: %v", r)
		}
	}

	t.Run("no profile", func(t *testing.T) {
		refused(t)
		d := aaDoctor(t, w, binary)
		for _, id := range []string{"mountns", "userns"} {
			c := d[id]
			if c.Status != "missing" || !strings.Contains(c.Detail, "kernel.apparmor_restrict_unprivileged_userns is 1") ||
				!strings.Contains(c.Fix, "packaging/apparmor/sandbox-executable in /etc/apparmor.d with this binary's path, "+binary+",") {
				t.Errorf("doctor's %s: %+v, want missing, naming the sysctl, the packaged profile and the binary's path", id, c)
			}
		}
		r, rep := as(binary, "--allow-degraded")
		t.Logf("--allow-degraded: exit %d, stderr: %s", r.code, strings.TrimSpace(r.stderr))
		if r.code != 7 || readFile(t, inside) != "in\n" {
			t.Fatalf("--allow-degraded: exit %d, want 7 (the write inside done, outside and the secret refused): %v", r.code, r)
		}
		ctrCheckRun(t, r, rep, ctrExpect{mode: "landlock", degraded: []string{
			`no mount namespace .*AppArmor restricts unprivileged user namespaces`, ctrLostProc}}, true)
	})

	t.Run("packaged profile", func(t *testing.T) {
		b, err := os.ReadFile(binary)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(aaPackagedPath, b, 0o755); err != nil {
			t.Fatalf("cannot put the binary where the profile names it (the guest needs SE_VM_WRITABLE=/usr/local/bin): %v", err)
		}
		t.Cleanup(func() { os.Remove(aaPackagedPath) })
		load(filepath.Join("..", "packaging", "apparmor", "sandbox-executable"))

		r, rep := as(aaPackagedPath, "--fs-mode", "exact")
		if r.code != 7 || readFile(t, inside) != "in\n" {
			t.Fatalf("exit %d, want 7 (the write inside done, outside and the secret refused): %v", r.code, r)
		}
		ctrCheckRun(t, r, rep, ctrExpect{mode: "exact"}, false)
		// Its own namespaces, and the profile (which grants userns to the
		// helper) is of no use to the program: seccomp refuses it new
		// namespaces.
		ns := `for n in mnt pid user net ipc uts; do readlink /proc/self/ns/$n; done; cat /proc/self/attr/current; echo; unshare -U true && echo USERNS-MADE; exit 0`
		r = run(t, runOpts{env: isoEnv(w), dir: w.root, cred: isoNobody.cred, bin: aaPackagedPath},
			"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--resource-limits", aaLimits,
			"--fs-mode", "exact", "--", "/bin/sh", "-c", ns)
		if r.code != 0 {
			t.Fatalf("namespaces: %v", r)
		}
		for _, n := range []string{"mnt", "pid", "user", "net", "ipc", "uts"} {
			mine, err := os.Readlink("/proc/self/ns/" + n)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(r.stdout, mine+"\n") {
				t.Errorf("the program shares the %s namespace %s: %v", n, mine, r)
			}
		}
		if !strings.Contains(r.stdout, "sandbox-executable (unconfined)") {
			t.Errorf("the program's AppArmor label is not the packaged profile's: %q", r.stdout)
		}
		if strings.Contains(r.stdout, "USERNS-MADE") {
			t.Errorf("the program made a user namespace of its own: %v", r)
		}
		d := aaDoctor(t, w, aaPackagedPath)
		for _, id := range []string{"mountns", "netns", "userns"} {
			if d[id].Status != "ok" {
				t.Errorf("doctor's %s with the profile: %+v, want ok", id, d[id])
			}
		}

		t.Run("uncovered path", func(t *testing.T) {
			// binary is a copy in the tests' own directory: no
			// attachment names it.
			refused(t)
		})
	})
}
