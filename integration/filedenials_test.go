package integration

import (
	"bufio"
	endian "encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/auditlog"
	"sandbox-executable/internal/testcap"
)

// fileDenial is a "file" line of --log-denials.
type fileDenial struct {
	Kind, Path, Operation, Rule, Source, Allow, Exe, Errno string
	Pid                                                    int
}

// fileReport is the report's part of the run's file denials.
type fileReport struct {
	Denials struct {
		LandlockObserved bool `json:"landlock_observed"`
		Files            struct {
			Observed    bool
			Count       int64
			KernelCount *uint64 `json:"kernel_count"`
			Why, Unseen string
		} `json:"files"`
	} `json:"denials"`
}

// readDenials reads the file lines of a denial log.
func readDenials(t *testing.T, path string) []fileDenial {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fileDenial
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var d fileDenial
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("denial log line %q: %v", sc.Text(), err)
		}
		if d.Kind == "file" {
			out = append(out, d)
		}
	}
	return out
}

func readFileReport(t *testing.T, path string) fileReport {
	t.Helper()
	var r fileReport
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report: %v: %s", err, b)
	}
	return r
}

// setAudit sets the kernel's audit on or off (AUDIT_SET), as auditctl -e.
func setAudit(t *testing.T, on bool) {
	t.Helper()
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	const auditSet, statusEnabled = 1001, 1
	body := make([]byte, 44) // struct audit_status up to backlog_wait_time_actual
	endian.NativeEndian.PutUint32(body[0:], statusEnabled)
	if on {
		endian.NativeEndian.PutUint32(body[4:], 1)
	}
	msg := make([]byte, 16+len(body))
	endian.NativeEndian.PutUint32(msg[0:], uint32(len(msg)))
	endian.NativeEndian.PutUint16(msg[4:], auditSet)
	endian.NativeEndian.PutUint16(msg[6:], unix.NLM_F_REQUEST|unix.NLM_F_ACK)
	copy(msg[16:], body)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil || n < 20 {
		t.Fatalf("AUDIT_SET: %v", err)
	}
	if e := int32(endian.NativeEndian.Uint32(buf[16:])); e != 0 {
		t.Fatalf("AUDIT_SET enabled=%v: %v", on, unix.Errno(-e))
	}
}

// withAudit has the kernel's audit on for the test (Landlock writes no
// record without it) and puts it back as it was: a test as root on a host
// whose audit is off (no auditd, no audit=1) turns it on, as an
// administrator would with auditctl -e 1.
func withAudit(t *testing.T, on bool) {
	t.Helper()
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root: reading the audit log takes CAP_AUDIT_READ, setting it CAP_AUDIT_CONTROL")
	}
	if landlockABI(t) < 7 {
		t.Skipf("Landlock ABI %d has no audit records (ABI 7, Linux 6.15)", landlockABI(t))
	}
	st, err := auditlog.QueryStatus()
	if err != nil {
		t.Fatalf("the kernel's audit status: %v", err)
	}
	if st.Enabled == 2 {
		if !on {
			t.Skip("the kernel's audit is locked on")
		}
		return
	}
	if (st.Enabled == 1) == on {
		return
	}
	setAudit(t, on)
	t.Cleanup(func() { setAudit(t, st.Enabled == 1) })
}

// findDenial is the first line for path whose operation has op.
func findDenial(ds []fileDenial, path, op string) *fileDenial {
	for i, d := range ds {
		if d.Path == path && strings.Contains(d.Operation, op) {
			return &ds[i]
		}
	}
	return nil
}

// TestFileDenialsLogged: as root, with the kernel's audit on, a write
// outside the writable roots and a read of ~/.ssh/id_rsa that Landlock
// refuses are lines of --log-denials, with the path, the rights, the rule
// of the policy that refused them and what would allow them, and the
// report counts them; a path made to look like more fields is only a
// path. In exact mode the mounts refuse those two before Landlock is
// asked: the report says so, no line claims them, and what Landlock does
// refuse there (a secret that appears during the run) is a line.
func TestFileDenialsLogged(t *testing.T) {
	withAudit(t, true)
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := newWorkspace(t)
			dir := t.TempDir()
			logPath, repPath := filepath.Join(dir, "denials.jsonl"), filepath.Join(dir, "report.json")
			victim := filepath.Join(w.out, "victim")
			secret := filepath.Join(w.home, ".ssh", "id_rsa")
			// A name the kernel must encode, made to read as more fields.
			forged := filepath.Join(w.out, `x" domain=1 blockers=fs.read_file path="shadow`)
			write(t, forged, "original\n")
			late := filepath.Join(w.home, ".git-credentials")
			ready := filepath.Join(w.root, "src", "ready")
			script := `P=$1; $P write "$2"; $P read "$3"; $P write "$4"; : > "$5"; i=0
while [ ! -e "$6" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i+1)); done; $P read "$6"; exit 0`
			// The late secret appears once the program runs: denied,
			// absent when the run was decided, so only Landlock keeps it.
			go func() {
				for i := 0; i < 400; i++ {
					if _, err := os.Stat(ready); err == nil {
						_ = os.WriteFile(late, []byte("https://u:p@host\n"), 0o600)
						return
					}
					time.Sleep(25 * time.Millisecond)
				}
			}()
			opts := append(fsOpts(t, mode), "--log-denials", logPath, "--report-file", repPath)
			r := w.sandbox(t, wsPolicy(t, w.root), opts, "/bin/sh", "-c", script, "sh", probe, victim, secret, forged, ready, late)
			if r.code != 0 {
				t.Fatalf("run: %v", r)
			}
			if got := readFile(t, victim); got != "original\n" {
				t.Fatalf("the write outside landed: %q", got)
			}
			ds := readDenials(t, logPath)
			rep := readFileReport(t, repPath)
			t.Logf("report: %+v; lines: %+v", rep.Denials.Files, ds)
			if !rep.Denials.Files.Observed || !rep.Denials.LandlockObserved {
				t.Errorf("file denials not observed: %+v", rep.Denials)
			}
			if d := findDenial(ds, late, "read_file"); d == nil || !strings.HasPrefix(d.Rule, "a denied path, unreadable") ||
				d.Source != "default_sensitive_paths" || d.Allow == "" {
				t.Errorf("the late secret's read: %+v in %+v", d, ds)
			}
			if mode == "exact" {
				if !strings.Contains(rep.Denials.Files.Unseen, "EROFS") {
					t.Errorf("exact mode: the report does not say what has no record: %q", rep.Denials.Files.Unseen)
				}
				for _, p := range []string{victim, secret} {
					if d := findDenial(ds, p, ""); d != nil {
						t.Errorf("exact mode: a line for %s, which the mounts refuse: %+v", p, d)
					}
				}
				return
			}
			if d := findDenial(ds, victim, "write_file"); d == nil || d.Rule != "outside the writable roots" ||
				!strings.Contains(d.Allow, "writable_roots") || d.Errno != "EACCES" || d.Pid <= 0 || d.Exe != probe {
				t.Errorf("the write outside the roots: %+v in %+v", d, ds)
			}
			if d := findDenial(ds, secret, "read_file"); d == nil || d.Rule != "a denied path, unreadable: "+filepath.Join(w.home, ".ssh") ||
				d.Source != "default_sensitive_paths" || !strings.Contains(d.Allow, "sensitive_paths") {
				t.Errorf("the read of ~/.ssh/id_rsa: %+v in %+v", d, ds)
			}
			// The name is the path, whole, and no field of its own.
			if d := findDenial(ds, forged, "write_file"); d == nil || d.Rule != "outside the writable roots" {
				t.Errorf("the write to the forged name: %+v in %+v", d, ds)
			}
			for _, d := range ds {
				if strings.HasSuffix(d.Path, "shadow") && d.Path != forged || strings.Contains(d.Operation, "read") && d.Path == forged {
					t.Errorf("a name made into a line of its own: %+v", d)
				}
			}
			if n := rep.Denials.Files.Count; n < 4 || n != int64(len(ds)) {
				t.Errorf("report counts %d file denials, the log has %d", n, len(ds))
			}
		})
	}
}

// TestFileDenialsWhyNot: where the run cannot observe its file denials,
// the report says why, and the run is otherwise the same: the kernel's
// audit off (as root), an unprivileged user (no CAP_AUDIT_READ).
func TestFileDenialsWhyNot(t *testing.T) {
	t.Run("audit off", func(t *testing.T) {
		withAudit(t, false)
		w := newWorkspace(t)
		repPath := filepath.Join(t.TempDir(), "report.json")
		r := w.sandbox(t, wsPolicy(t, w.root), append(fsOpts(t, "landlock"), "--report-file", repPath), probe, "write", filepath.Join(w.out, "victim"))
		if probeResult(r) != "EACCES" {
			t.Fatalf("the write outside: %v", r)
		}
		rep := readFileReport(t, repPath)
		if rep.Denials.Files.Observed || !strings.Contains(rep.Denials.Files.Why, "audit is off") {
			t.Errorf("audit off: %+v", rep.Denials.Files)
		}
	})
	t.Run("unprivileged", func(t *testing.T) {
		if os.Geteuid() != 0 {
			testcap.Skipf(t, testcap.Root, "needs root to switch to nobody")
		}
		w := newWorkspace(t)
		dir := t.TempDir()
		if err := os.Chmod(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		repPath := filepath.Join(dir, "report.json")
		args := []string{"--sandbox-policy", roPolicy, "--allow-degraded", "--report-file", repPath, "--", probe, "write", filepath.Join(w.out, "victim")}
		r := run(t, runOpts{env: w.env(), dir: "/", cred: &syscall.Credential{Uid: 65534, Gid: 65534}}, args...)
		if probeResult(r) == "ok" {
			t.Fatalf("the write outside: %v", r)
		}
		rep := readFileReport(t, repPath)
		// Below ABI 7 the kernel makes no record for anyone to read.
		want := "CAP_AUDIT_READ"
		if landlockABI(t) < 7 {
			want = "has no audit records"
		}
		if rep.Denials.Files.Observed || !strings.Contains(rep.Denials.Files.Why, want) {
			t.Errorf("unprivileged: %+v, want the reason to say %q", rep.Denials.Files, want)
		}
	})
}
