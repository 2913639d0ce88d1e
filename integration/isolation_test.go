package integration

// Isolation of the program from the host's process world: no capabilities,
// its own PID, IPC, UTS and cgroup namespaces, a fresh /proc, a minimal
// /dev, and an init that forwards signals and takes the whole tree down with
// the helper.
//
// Whatever could change the machine if the sandbox failed (the hostname,
// SysV IPC objects) runs inside an unshare(1) of its own, so a failure
// changes only a namespace that ends with the test.

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"sandbox-executable/internal/testcap"
)

// isoUser is who runs the helper.
type isoUser struct {
	name string
	cred *syscall.Credential // nil: the test's own user, root
}

var (
	isoRoot   = isoUser{name: "root"}
	isoNobody = isoUser{name: "nobody", cred: &syscall.Credential{Uid: 65534, Gid: 65534}}
)

// isoPath is the PATH of every run here (chroot is in /usr/sbin).
const isoPath = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"

func isoNeedRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root: runs the helper as root and switches to nobody")
	}
}

// isoAnyUser is root and nobody, for what must hold for any user.
func isoAnyUser(t *testing.T) []isoUser {
	t.Helper()
	isoNeedRoot(t)
	return []isoUser{isoRoot, isoNobody}
}

// isoMissing lists the tools not found in isoPath.
func isoMissing(tools ...string) []string {
	var missing []string
	for _, tool := range tools {
		found := false
		for _, d := range filepath.SplitList(isoPath) {
			if st, err := os.Stat(filepath.Join(d, tool)); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
				found = true
				break
			}
		}
		if !found {
			missing = append(missing, tool)
		}
	}
	return missing
}

func isoNeedTools(t *testing.T, tools ...string) {
	t.Helper()
	if m := isoMissing(tools...); len(m) > 0 {
		testcap.Skipf(t, testcap.Installed, "missing on this host: %s", strings.Join(m, ", "))
	}
}

// isoWorkspace is a workspace owned by u.
func isoWorkspace(t *testing.T, u isoUser) *workspace {
	t.Helper()
	w := newWorkspace(t)
	if u.cred != nil {
		for _, p := range []string{w.root, w.home, w.out} {
			_ = filepath.Walk(p, func(q string, _ os.FileInfo, _ error) error {
				return os.Lchown(q, int(u.cred.Uid), int(u.cred.Gid))
			})
		}
	}
	return w
}

func isoEnv(w *workspace, extra ...string) []string {
	return append(append(w.env(), "PATH="+isoPath), extra...)
}

// isoArgs are the helper's arguments up to and including "--": the
// workspace policy over w.root (no resource_limits of its own), mode, then
// extra helper options.
func isoArgs(t *testing.T, w *workspace, mode string, extra ...string) []string {
	t.Helper()
	args := []string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root)}
	args = append(args, fsOpts(t, mode)...)
	for _, e := range extra {
		// fsOpts gives --allow-degraded already where the kernel
		// cannot stop truncate(2); the helper refuses it twice.
		if e != "--allow-degraded" || !slices.Contains(args, e) {
			args = append(args, e)
		}
	}
	return append(args, "--")
}

// isoRun runs argv under the workspace policy in mode as u (through o.via
// when set; o.cred is then the caller's to set).
func isoRun(t *testing.T, w *workspace, u isoUser, mode string, o runOpts, argv ...string) result {
	t.Helper()
	o.env = isoEnv(w, o.env...)
	if o.dir == "" {
		o.dir = w.root
	}
	if o.cred == nil && len(o.via) == 0 {
		o.cred = u.cred
	}
	return run(t, o, append(isoArgs(t, w, mode), argv...)...)
}

// isoSection is the text between the line "--- name" and the next line
// starting with "--- " (or the end).
func isoSection(out, name string) string {
	_, rest, ok := strings.Cut(out, "--- "+name+"\n")
	if !ok || strings.HasPrefix(rest, "--- ") {
		return ""
	}
	if i := strings.Index(rest, "\n--- "); i >= 0 {
		return rest[:i+1]
	}
	return rest
}

// isoLines are the non-empty lines of s.
func isoLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.TrimSpace(l) != "" {
			out = append(out, l)
		}
	}
	return out
}

// waitFor begins a test's shell script with two waits, each on progress
// and for 20 s at most, never a fixed sleep (an emulated guest on a busy
// host can take longer for anything): "listening FILE" until a probe
// server whose stdout goes to FILE says it listens, and "logged FILE N"
// until FILE has N lines (a datagram server's log).
const waitFor = `listening() { i=0; until grep -q listening "$1" 2>/dev/null || [ $i -ge 400 ]; do sleep 0.05; i=$((i+1)); done; }
logged() { i=0; until [ "$(cat "$1" 2>/dev/null | wc -l)" -ge "$2" ] || [ $i -ge 400 ]; do sleep 0.05; i=$((i+1)); done; }
`

// isoPoll polls cond every 20 ms for up to d.
func isoPoll(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// isoKillTagged kills (by pid) every process whose command line holds one
// of the tags: what a failed test left running.
func isoKillTagged(tags ...string) {
	for _, tg := range tags {
		for _, p := range processesTagged(tg) {
			if n, err := strconv.Atoi(p); err == nil && n != os.Getpid() {
				_ = syscall.Kill(n, syscall.SIGKILL)
			}
		}
	}
}

// isoProc is a helper started in the background, its output in files (no
// pipe a surviving process could hold open).
type isoProc struct {
	cmd            *exec.Cmd
	stdout, stderr string
	done           chan struct{}
	code           int
}

func isoStart(t *testing.T, w *workspace, u isoUser, env []string, args []string) *isoProc {
	t.Helper()
	dir := t.TempDir()
	p := &isoProc{stdout: filepath.Join(dir, "stdout"), stderr: filepath.Join(dir, "stderr"), done: make(chan struct{})}
	outf, err := os.Create(p.stdout)
	if err != nil {
		t.Fatal(err)
	}
	defer outf.Close()
	errf, err := os.Create(p.stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer errf.Close()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"LANG=C"}, isoEnv(w, env...)...)
	cmd.Dir = w.root
	cmd.Stdout, cmd.Stderr = outf, errf
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	started.Store(cmd.Process.Pid, true)
	p.cmd = cmd
	go func() {
		p.code = isoExitCode(cmd.Wait())
		close(p.done)
	}()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

func isoExitCode(err error) int {
	if err == nil {
		return 0
	}
	ee, ok := err.(*exec.ExitError)
	if !ok {
		return -1
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// wait reports whether the helper returned within d.
func (p *isoProc) wait(d time.Duration) bool {
	select {
	case <-p.done:
		return true
	case <-time.After(d):
		return false
	}
}

func (p *isoProc) output() string {
	o, _ := os.ReadFile(p.stdout)
	e, _ := os.ReadFile(p.stderr)
	return fmt.Sprintf("stdout %q, stderr %q", o, e)
}

// isoStarted runs script, which first prints "started", in a fresh
// workspace as u in mode, and returns the lines it printed after that.
func isoStarted(t *testing.T, u isoUser, mode, script string) []string {
	t.Helper()
	w := isoWorkspace(t, u)
	r := isoRun(t, w, u, mode, runOpts{}, "/bin/sh", "-c", script)
	if r.code != 0 || !strings.HasPrefix(r.stdout, "started\n") {
		t.Fatalf("the program did not run: %v", r)
	}
	return isoLines(r.stdout)[1:]
}

// TestNoCapabilities: whoever runs the helper, the program has no
// capability in any set, the bounding set included, and its securebits
// are locked (SECBIT_NOROOT and every *_LOCKED bit), in both modes.
func TestNoCapabilities(t *testing.T) {
	users := isoAnyUser(t)
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = ""
	}
	script := `echo started; grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status`
	if python != "" {
		// PR_GET_SECUREBITS is 27.
		script += `; ` + python + ` -c 'import ctypes; print("Securebits:", ctypes.CDLL(None).prctl(27, 0, 0, 0, 0))'`
	}
	for _, u := range users {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				seen := map[string]bool{}
				for _, l := range isoStarted(t, u, mode, script) {
					name, val, ok := strings.Cut(l, ":")
					if !ok {
						continue
					}
					val = strings.TrimSpace(val)
					if name == "Securebits" {
						sb, err := strconv.Atoi(val)
						// NOROOT 0x1, NO_SETUID_FIXUP 0x4, NO_CAP_AMBIENT_RAISE
						// 0x40 set, KEEP_CAPS 0x10 clear, each locked (0x2,
						// 0x8, 0x20, 0x80).
						if err != nil || sb != 0xef {
							t.Errorf("securebits %s (%#x), want exactly 0xef: NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE set, KEEP_CAPS clear, all four locked", val, sb)
						}
						continue
					}
					seen[name] = true
					if n, err := strconv.ParseUint(val, 16, 64); err != nil || n != 0 {
						t.Errorf("%s %s, want 0", name, val)
					}
				}
				for _, c := range []string{"CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"} {
					if !seen[c] {
						t.Errorf("/proc/self/status has no %s", c)
					}
				}
				if python == "" {
					t.Log("no /usr/bin/python3: securebits not checked")
				}
			})
		}
	}
}

// TestRootCannotUsePrivilege: a program run by root cannot set the
// hostname, chroot, take a real-time or higher priority, read the kernel
// log or take the real-time I/O class, in both modes; the hostname seen
// beside the helper is unchanged. The helper runs in an unshare --uts
// --ipc of its own, so a failure changes only that namespace.
func TestRootCannotUsePrivilege(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "unshare", "hostname")
	want, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	// The sibling's hostname is printed after the helper returns, in the
	// helper's own UTS namespace.
	via := []string{"unshare", "--uts", "--ipc", "--", "sh", "-c", `"$0" "$@"; rc=$?; echo "sibling-hostname=$(hostname)"; exit $rc`}
	for _, op := range []struct{ name, tool, script string }{
		{"hostname", "hostname", "hostname se-iso-pwned"},
		{"chroot", "chroot", "cd / && chroot . true"},
		{"chrt", "chrt", "chrt -f 1 true"},
		// GNU nice runs the command even when it cannot set the
		// niceness: the inner nice prints what it got.
		{"nice", "nice", `n=$(nice -n -1 nice) && [ "$n" = -1 ]`},
		{"dmesg", "dmesg", "dmesg >/dev/null"},
		{"ionice", "ionice", "ionice -c1 true"},
	} {
		for _, mode := range fsModes {
			t.Run(op.name+"/"+mode, func(t *testing.T) {
				isoNeedTools(t, op.tool)
				w := isoWorkspace(t, isoRoot)
				r := isoRun(t, w, isoRoot, mode, runOpts{via: via}, "/bin/sh", "-c", "echo started; "+op.script)
				if !strings.HasPrefix(r.stdout, "started\n") {
					t.Fatalf("the program did not run: %v", r)
				}
				if r.code == 0 {
					t.Errorf("%q succeeded as root inside the sandbox: %v", op.script, r)
				}
				if got := strings.TrimSpace(isoAfter(r.stdout, "sibling-hostname=")); got != want {
					t.Errorf("hostname beside the helper is %q, want %q", got, want)
				}
			})
		}
	}
	if got, _ := os.Hostname(); got != want {
		t.Errorf("the machine's hostname changed: %q -> %q", want, got)
	}
}

// isoAfter is the rest of the line after the last occurrence of prefix.
func isoAfter(out, prefix string) string {
	i := strings.LastIndex(out, prefix)
	if i < 0 {
		return ""
	}
	rest := out[i+len(prefix):]
	if j := strings.IndexByte(rest, '\n'); j >= 0 {
		rest = rest[:j]
	}
	return rest
}

// TestOwnNamespaces: the program is in PID, IPC, UTS and cgroup namespaces
// other than the helper's, for any user, in both modes.
func TestOwnNamespaces(t *testing.T) {
	users := isoAnyUser(t)
	kinds := []string{"pid", "ipc", "uts", "cgroup"}
	host := map[string]string{}
	for _, k := range kinds {
		l, err := os.Readlink("/proc/self/ns/" + k)
		if err != nil {
			testcap.Skipf(t, testcap.Namespaces, "no /proc/self/ns/%s here: %v", k, err)
		}
		host[k] = l
	}
	script := `echo started; for n in ` + strings.Join(kinds, " ") + `; do echo "$n $(readlink /proc/self/ns/$n)"; done`
	for _, u := range users {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				got := map[string]string{}
				for _, l := range isoStarted(t, u, mode, script) {
					if k, v, ok := strings.Cut(l, " "); ok {
						got[k] = v
					}
				}
				for _, k := range kinds {
					if got[k] == "" || got[k] == host[k] {
						t.Errorf("%s namespace inside %q, the helper's %q: want one of its own", k, got[k], host[k])
					}
				}
			})
		}
	}
}

// TestHostProcessesInvisible: for any user, in both modes, ps -e inside
// lists only the sandbox's own processes: not a host process of the same
// user that the test started, whose pid cannot be signalled, prlimit'ed,
// reniced or taskset; nor the supervisor (the helper), which is not the
// program's parent either.
func TestHostProcessesInvisible(t *testing.T) {
	users := isoAnyUser(t)
	isoNeedTools(t, "ps", "prlimit", "renice", "taskset")
	for _, u := range users {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := isoWorkspace(t, u)
				id := tag(t)
				host := exec.Command(probe, "sleep", "120", id)
				if u.cred != nil {
					host.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
				}
				if err := host.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = host.Process.Kill(); _ = host.Wait() })
				hostPid := host.Process.Pid
				if !isoPoll(5*time.Second, func() bool { return len(processesTagged(id)) > 0 }) {
					t.Fatal("the host process never showed its tag")
				}
				// The helper's pid, written by the shell that then
				// execs it.
				pidFile := filepath.Join(w.out, "helper.pid")
				via := []string{"sh", "-c", `echo $$ > '` + pidFile + `' && exec "$0" "$@"`}
				script := fmt.Sprintf(`echo started; hp=$(cat '%s'); echo "helper=$hp ppid=$PPID"
echo "--- ps"; ps -eo pid=,args=
echo "--- proc"; ls /proc | grep -c '^[0-9]'
echo "--- reach"
for p in %d $hp; do
	kill -0 $p 2>/dev/null && echo "kill -0 $p"
	prlimit --pid $p >/dev/null 2>&1 && echo "prlimit --pid $p"
	renice -n 1 -p $p >/dev/null 2>&1 && echo "renice -p $p"
	taskset -p $p >/dev/null 2>&1 && echo "taskset -p $p"
	test -e /proc/$p && echo "/proc/$p exists"
done
echo "--- end"`, pidFile, hostPid)
				r := isoRun(t, w, u, mode, runOpts{via: via, cred: u.cred}, "/bin/sh", "-c", script)
				if r.code != 0 || !strings.HasPrefix(r.stdout, "started\n") {
					t.Fatalf("the program did not run: %v", r)
				}
				m := regexp.MustCompile(`helper=(\d+) ppid=(\d+)`).FindStringSubmatch(r.stdout)
				if m == nil {
					t.Fatalf("no helper pid: %v", r)
				}
				if m[1] == m[2] {
					t.Errorf("the program's parent is the helper (pid %s)", m[1])
				}
				ps := isoLines(isoSection(r.stdout, "ps"))
				for _, l := range ps {
					if strings.Contains(l, id) {
						t.Errorf("ps -e inside lists the host's process: %q", l)
					}
					if f := strings.Fields(l); len(f) > 0 && f[0] == m[1] {
						if len(l) > 120 {
							l = l[:120] + "..."
						}
						t.Errorf("ps -e inside lists the helper's pid: %q", l)
					}
				}
				if len(ps) > 10 {
					t.Errorf("ps -e inside lists %d processes, want only the sandbox's few; first %q", len(ps), ps[:5])
				}
				if n, _ := strconv.Atoi(strings.TrimSpace(isoSection(r.stdout, "proc"))); n > 10 {
					t.Errorf("/proc inside has %d pid directories, want only the sandbox's few", n)
				}
				for _, l := range isoLines(isoSection(r.stdout, "reach")) {
					t.Errorf("reached from inside (host process %d, helper %s): %s", hostPid, m[1], l)
				}
			})
		}
	}
}

// ipcKey is one SysV IPC object as ipcs lists it.
type ipcKey struct{ kind, key, id string }

// isoIPCObjects parses ipcs -m -q -s output.
func isoIPCObjects(out string) map[ipcKey]bool {
	objs := map[ipcKey]bool{}
	kind := ""
	for _, l := range strings.Split(out, "\n") {
		switch {
		case strings.Contains(l, "Shared Memory Segments"):
			kind = "shm"
		case strings.Contains(l, "Message Queues"):
			kind = "msg"
		case strings.Contains(l, "Semaphore Arrays"):
			kind = "sem"
		}
		if f := strings.Fields(l); len(f) >= 2 && strings.HasPrefix(f[0], "0x") {
			objs[ipcKey{kind, f[0], f[1]}] = true
		}
	}
	return objs
}

// TestSysVIPCIsolated: for any user, in both modes, a shared memory
// segment, a message queue and a semaphore set made outside by the same
// user cannot be seen or attached inside, and a segment made inside is gone
// after the run. The helper and ipcmk run in an unshare --ipc of their own
// (as nobody through setpriv inside it): the host's IPC objects are never
// touched, and whatever is left ends with that namespace.
func TestSysVIPCIsolated(t *testing.T) {
	users := isoAnyUser(t)
	isoNeedTools(t, "unshare", "ipcmk", "ipcs", "ipcrm", "setpriv")
	python := "/usr/bin/python3"
	if _, err := os.Stat(python); err != nil {
		python = ""
	}
	hostBefore := isoHostIPC(t)
	for _, u := range users {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := isoWorkspace(t, u)
				ids := w.out
				outer := `ipcmk -M 4096 -p 0600 >/dev/null && ipcmk -Q -p 0600 >/dev/null && ipcmk -S 1 -p 0600 >/dev/null || { echo ipcmk-failed; exit 99; }
ipcs -m | awk '$1 ~ /^0x/ {print $2}' > '` + ids + `/shm'
ipcs -q | awk '$1 ~ /^0x/ {print $2}' > '` + ids + `/msg'
ipcs -s | awk '$1 ~ /^0x/ {print $2}' > '` + ids + `/sem'
echo "--- before"; ipcs -m -q -s
"$0" "$@"; rc=$?
echo "--- after"; ipcs -m -q -s
ipcrm --all 2>/dev/null
exit $rc`
				via := []string{"unshare", "--ipc", "--"}
				if u.cred != nil {
					via = append(via, "setpriv", "--reuid=65534", "--regid=65534", "--clear-groups")
				}
				via = append(via, "sh", "-c", outer)
				attach := ""
				if python != "" {
					attach = `; ` + python + ` -c 'import ctypes, sys; l = ctypes.CDLL(None); l.shmat.restype = ctypes.c_void_p; r = l.shmat(int(sys.argv[1]), None, 0); sys.exit(0 if r not in (None, 2**64 - 1) else 1)' "$id" 2>/dev/null && echo "attached shm $id"`
				}
				inner := `echo started; echo "--- inside"; ipcs -m -q -s
echo "--- seen"
for id in $(cat '` + ids + `/shm'); do ipcs -m -i "$id" 2>/dev/null | grep -q "shmid=$id" && echo "seen shm $id"` + attach + `; done
for id in $(cat '` + ids + `/msg'); do ipcs -q -i "$id" 2>/dev/null | grep -q "msqid=$id" && echo "seen msg $id"; done
for id in $(cat '` + ids + `/sem'); do ipcs -s -i "$id" 2>/dev/null | grep -q "semid=$id" && echo "seen sem $id"; done
echo "--- made"; ipcmk -M 32M >/dev/null && echo made-inside`
				r := isoRun(t, w, u, mode, runOpts{via: via}, "/bin/sh", "-c", inner)
				before := isoIPCObjects(isoSection(r.stdout, "before"))
				after := isoIPCObjects(isoSection(r.stdout, "after"))
				// Nothing of this run can have reached the host's
				// namespace; should something have, remove it (by key:
				// ipcmk's keys are random).
				t.Cleanup(func() {
					for o := range isoHostIPC(t) {
						if hostBefore[o] {
							continue
						}
						for m := range before {
							if m.key == o.key {
								isoRemoveIPC(t, o)
							}
						}
						for m := range after {
							if m.key == o.key && !before[m] {
								isoRemoveIPC(t, o)
							}
						}
					}
				})
				if strings.Contains(r.stdout, "ipcmk-failed") {
					t.Fatalf("ipcmk outside failed: %v", r)
				}
				if !strings.Contains(r.stdout, "started\n") {
					t.Fatalf("the program did not run: %v", r)
				}
				if len(before) != 3 {
					t.Fatalf("outside objects: %v (%v)", before, r)
				}
				for o := range isoIPCObjects(isoSection(r.stdout, "inside")) {
					if before[o] {
						t.Errorf("ipcs inside lists the outside %s %s (key %s)", o.kind, o.id, o.key)
					}
				}
				for _, l := range isoLines(isoSection(r.stdout, "seen")) {
					t.Errorf("inside: %s (made outside)", l)
				}
				if !strings.Contains(isoSection(r.stdout, "made"), "made-inside") {
					t.Errorf("ipcmk -M 32M inside failed (exit %d): %v", r.code, r)
				}
				for o := range after {
					if !before[o] {
						t.Errorf("after the run the namespace holds a new %s %s (key %s): made inside, outlived it", o.kind, o.id, o.key)
					}
				}
				for o := range before {
					if !after[o] {
						t.Errorf("the outside %s %s (key %s) is gone after the run", o.kind, o.id, o.key)
					}
				}
			})
		}
	}
}

// isoHostIPC is what ipcs lists in the test's own IPC namespace.
func isoHostIPC(t *testing.T) map[ipcKey]bool {
	t.Helper()
	out, err := exec.Command("ipcs", "-m", "-q", "-s").Output()
	if err != nil {
		t.Fatalf("ipcs: %v", err)
	}
	return isoIPCObjects(string(out))
}

func isoRemoveIPC(t *testing.T, o ipcKey) {
	t.Errorf("%s with key %s reached the host's IPC namespace; removing it", o.kind, o.key)
	flag := map[string]string{"shm": "-M", "msg": "-Q", "sem": "-S"}[o.kind]
	if out, err := exec.Command("ipcrm", flag, o.key).CombinedOutput(); err != nil {
		t.Errorf("ipcrm %s %s: %v %s", flag, o.key, err, out)
	}
}

// TestHelperKilledLeavesNothing: kill -9 of the helper ends every process
// the program started, a setsid'd double-forked daemon, a setsid'd sleep
// and one that ignores SIGTERM included: for any user, in both modes, with
// resource limits and without any (a policy without resource_limits and no
// --resource-limits). As nobody the limits need --allow-degraded (there is
// no delegated cgroup).
func TestHelperKilledLeavesNothing(t *testing.T) {
	users := isoAnyUser(t)
	isoNeedTools(t, "setsid", "sleep")
	for _, u := range users {
		for _, lim := range []string{"no limits", "limits"} {
			for _, mode := range fsModes {
				t.Run(u.name+"/"+lim+"/"+mode, func(t *testing.T) {
					w := isoWorkspace(t, u)
					var opts []string
					if lim == "limits" {
						opts = []string{"--resource-limits", limits(256, 64, 0, 60)}
						if u.cred != nil && !slices.Contains(fsOpts(t, mode), "--allow-degraded") {
							opts = append(opts, "--allow-degraded")
						}
					}
					id := tag(t)
					// A unique argv for sleep(1): seconds with nine
					// random decimals.
					sleepArg := fmt.Sprintf("%d.%09d", 1000+rand.Intn(9000), rand.Intn(1e9))
					// In src: Landlock-only mode narrows the root's own
					// top level.
					ready := filepath.Join(w.root, "src", "ready")
					// The tags come through the environment: the
					// helper's own argv must not carry them.
					script := `"$0" daemon 1000 "$SE_ISO_TAG" || exit 9
setsid sleep "$SE_ISO_SLEEP" &
"$0" ignore-term-sleep 1000 "$SE_ISO_TAG" &
: > src/ready
exec "$0" sleep 600 "$SE_ISO_TAG"`
					args := append(isoArgs(t, w, mode, opts...), "/bin/sh", "-c", script, probe)
					p := isoStart(t, w, u, []string{"SE_ISO_TAG=" + id, "SE_ISO_SLEEP=" + sleepArg}, args)
					t.Cleanup(func() { isoKillTagged(id, sleepArg) })
					up := isoPoll(15*time.Second, func() bool {
						_, err := os.Stat(ready)
						return err == nil && len(processesTagged(id)) >= 3 && len(processesTagged(sleepArg)) >= 1
					})
					if !up {
						select {
						case <-p.done:
							t.Fatalf("the program ended before its processes were up: exit %d, %s", p.code, p.output())
						default:
						}
						t.Fatalf("the program's processes never came up (%v tagged, %v sleep): %s", processesTagged(id), processesTagged(sleepArg), p.output())
					}
					if err := p.cmd.Process.Signal(syscall.SIGKILL); err != nil {
						t.Fatal(err)
					}
					if !p.wait(10 * time.Second) {
						t.Fatal("the helper did not die of SIGKILL")
					}
					gone := isoPoll(5*time.Second, func() bool {
						return len(processesTagged(id)) == 0 && len(processesTagged(sleepArg)) == 0
					})
					if !gone {
						var left []string
						for _, pid := range append(processesTagged(id), processesTagged(sleepArg)...) {
							cl, _ := os.ReadFile("/proc/" + pid + "/cmdline")
							left = append(left, pid+" "+strings.ReplaceAll(strings.TrimRight(string(cl), "\x00"), "\x00", " "))
						}
						t.Errorf("5 s after kill -9 of the helper still running: %q", left)
					}
				})
			}
		}
	}
}

// TestTimeoutDespiteStarvedSupervisor: a program that sets its parent's
// RLIMIT_NOFILE to 0 (today its parent is the supervisor) and then sleeps
// still ends on the 2 s timeout with exit 124, well within 30 s, its tree
// gone: for any user, in both modes, with and without tree limits.
func TestTimeoutDespiteStarvedSupervisor(t *testing.T) {
	users := isoAnyUser(t)
	isoNeedTools(t, "prlimit")
	type row struct {
		u      isoUser
		name   string
		limits string
	}
	var rows []row
	for _, u := range users {
		rows = append(rows, row{u, "no tree limits", limits(0, 0, 0, 2)})
		if u.cred == nil {
			// Tree limits as nobody would need a delegated cgroup.
			rows = append(rows, row{u, "tree limits", limits(256, 64, 0, 2)})
		}
	}
	for _, rw := range rows {
		for _, mode := range fsModes {
			t.Run(rw.u.name+"/"+rw.name+"/"+mode, func(t *testing.T) {
				t.Parallel()
				w := isoWorkspace(t, rw.u)
				id := tag(t)
				script := `prlimit --pid $PPID --nofile=0:0; "$0" sleep 600 "$SE_ISO_TAG"`
				args := append(isoArgs(t, w, mode, "--resource-limits", rw.limits), "/bin/sh", "-c", script, probe)
				start := time.Now()
				p := isoStart(t, w, rw.u, []string{"SE_ISO_TAG=" + id}, args)
				t.Cleanup(func() { isoKillTagged(id) })
				if !p.wait(30 * time.Second) {
					_ = p.cmd.Process.Kill()
					<-p.done
					t.Fatalf("the 2 s timeout did not end the run within 30 s: %s", p.output())
				}
				if p.code != 124 {
					t.Errorf("exit %d after %s, want 124: %s", p.code, time.Since(start).Round(time.Millisecond), p.output())
				}
				if !isoPoll(5*time.Second, func() bool { return len(processesTagged(id)) == 0 }) {
					t.Errorf("the program's sleep outlived the timeout: %v", processesTagged(id))
				}
			})
		}
	}
}

// TestPlainProgramDiesOfHelpersSignal: a program with no handler dies of
// SIGTERM, SIGINT or SIGHUP sent to the helper, and the helper says so
// (128+N), for any user, in both modes. (TestSignalsReachTheProgram uses
// traps; a program that is PID 1 of a namespace would ignore these without
// a handler, so this one has none.)
func TestPlainProgramDiesOfHelpersSignal(t *testing.T) {
	users := isoAnyUser(t)
	sigs := []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP}
	// Caught here, they are default in the helper whatever the test's
	// own parent ignores (see TestSignalsReachTheProgram).
	caught := make(chan os.Signal, len(sigs))
	for _, sig := range sigs {
		signal.Notify(caught, sig)
	}
	defer signal.Stop(caught)
	for _, u := range users {
		for _, mode := range fsModes {
			for _, sig := range sigs {
				t.Run(u.name+"/"+mode+"/"+sig.String(), func(t *testing.T) {
					w := isoWorkspace(t, u)
					id := tag(t)
					args := append(isoArgs(t, w, mode), "/bin/sh", "-c", `exec "$0" sleep 600 "$SE_ISO_TAG"`, probe)
					p := isoStart(t, w, u, []string{"SE_ISO_TAG=" + id}, args)
					t.Cleanup(func() { isoKillTagged(id) })
					if !isoPoll(15*time.Second, func() bool { return len(processesTagged(id)) > 0 }) {
						t.Fatalf("the program never started: %s", p.output())
					}
					if err := p.cmd.Process.Signal(sig); err != nil {
						t.Fatal(err)
					}
					if !p.wait(10 * time.Second) {
						t.Fatalf("the helper did not return 10 s after %v", sig)
					}
					if want := 128 + int(sig); p.code != want {
						t.Errorf("exit %d, want %d: %s", p.code, want, p.output())
					}
				})
			}
		}
	}
}

// isoHostBlockDevices are the block device nodes under the host's /dev.
func isoHostBlockDevices() []string {
	var out []string
	_ = filepath.WalkDir("/dev", func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type()&os.ModeDevice != 0 && d.Type()&os.ModeCharDevice == 0 {
			out = append(out, p)
		}
		return nil
	})
	return out
}

// isoDevAllowed is everything the sandbox's /dev may hold.
var isoDevAllowed = map[string]bool{
	"null": true, "zero": true, "full": true, "random": true, "urandom": true, "tty": true,
	"pts": true, "ptmx": true, "shm": true, "fd": true, "stdin": true, "stdout": true, "stderr": true,
}

// TestMinimalDev: for any user, in both modes, /dev inside holds only
// null, zero, full, random, urandom, tty, pts/, ptmx, shm/, fd and the
// stdin/stdout/stderr links (no block device, no kmsg, console or mem); no
// block device of the host can be opened, even by root; and what a program
// needs still works, /dev/tty included (on a terminal the test makes).
func TestMinimalDev(t *testing.T) {
	users := isoAnyUser(t)
	blocks := isoHostBlockDevices()
	script := `echo started
echo "--- ls"; ls -A /dev
echo "--- blk"; find /dev -type b 2>/dev/null
echo "--- open"; for d in "$@"; do head -c1 "$d" >/dev/null 2>&1 && echo "$d"; done
echo "--- works"
echo x > /dev/null && echo null
[ "$(head -c 4 /dev/zero | wc -c)" = 4 ] && echo zero
[ "$(head -c 4 /dev/urandom | wc -c)" = 4 ] && echo urandom
[ "$(head -c 4 /dev/random | wc -c)" = 4 ] && echo random
if [ "$(head -c 4 /dev/full | wc -c)" = 4 ] && ! (echo x > /dev/full) 2>/dev/null; then echo full; fi
test -c /dev/ptmx && test -d /dev/pts && echo pts
test -d /dev/shm && echo shm
ls /dev/fd/ >/dev/null && echo fd
[ -L /dev/stdin ] && [ -L /dev/stdout ] && [ -L /dev/stderr ] && [ -e /dev/stdin ] && [ -e /dev/stdout ] && [ -e /dev/stderr ] && echo std
echo "--- end"`
	wantWorks := []string{"null", "zero", "urandom", "random", "full", "pts", "shm", "fd", "std"}
	for _, u := range users {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := isoWorkspace(t, u)
				r := isoRun(t, w, u, mode, runOpts{}, append([]string{"/bin/sh", "-c", script, "sh"}, blocks...)...)
				if !strings.HasPrefix(r.stdout, "started\n") {
					t.Fatalf("the program did not run: %v", r)
				}
				var extra []string
				for _, n := range isoLines(isoSection(r.stdout, "ls")) {
					switch n {
					case "kmsg", "console", "mem", "kmem", "port":
						t.Errorf("/dev/%s inside", n)
					}
					if !isoDevAllowed[n] {
						extra = append(extra, n)
					}
				}
				if len(extra) > 0 {
					t.Errorf("/dev inside holds %d entries beyond the minimal set: %q", len(extra), extra)
				}
				if b := isoLines(isoSection(r.stdout, "blk")); len(b) > 0 {
					t.Errorf("block devices in /dev inside: %q", b)
				}
				if o := isoLines(isoSection(r.stdout, "open")); len(o) > 0 {
					t.Errorf("%s could open the host's block devices: %q (of %q)", u.name, o, blocks)
				}
				works := map[string]bool{}
				for _, l := range isoLines(isoSection(r.stdout, "works")) {
					works[l] = true
				}
				for _, d := range wantWorks {
					if !works[d] {
						t.Errorf("/dev %s does not work inside (%v)", d, r)
					}
				}
				isoDevTTY(t, w, u, mode)
			})
		}
	}
}

// isoDevTTY: on a terminal, the program can write /dev/tty.
func isoDevTTY(t *testing.T, w *workspace, u isoUser, mode string) {
	t.Helper()
	cmd := exec.Command(binary, append(isoArgs(t, w, mode), "/bin/sh", "-c", `echo "tty-$((6*7))" > /dev/tty && exit 3`)...)
	cmd.Env = append([]string{"LANG=C", "TERM=dumb"}, isoEnv(w)...)
	cmd.Dir = w.root
	if u.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: u.cred}
	}
	f, err := pty.Start(cmd)
	if err != nil {
		t.Logf("no terminal for the /dev/tty check: %v", err)
		return
	}
	defer f.Close()
	started.Store(cmd.Process.Pid, true)
	out := &syncBuffer{}
	go func() {
		b := make([]byte, 4096)
		for {
			n, err := f.Read(b)
			out.Write(b[:n])
			if err != nil {
				return
			}
		}
	}()
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if code := isoExitCode(err); code != 3 {
			t.Errorf("/dev/tty on a terminal: exit %d, want 3; terminal shows %q", code, out.String())
		}
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		t.Errorf("/dev/tty on a terminal: the helper did not return")
	}
	if !isoPoll(5*time.Second, func() bool { return strings.Contains(out.String(), "tty-42") }) {
		t.Errorf("/dev/tty on a terminal: never saw the write; terminal shows %q", out.String())
	}
}

// TestCPUBudgetDespiteStarvedSupervisor: the tree's CPU budget still ends
// the run (ending cpu_budget, exit 152) when the program first limits its
// parent's open files, which on the old binary was the supervisor itself
// (its cgroup reads then failed and the budget never fired; the processes
// died only of their own RLIMIT_CPU). Four spinners under a 2 s budget
// spend it long before any of them reaches 2 s of its own.
func TestCPUBudgetDespiteStarvedSupervisor(t *testing.T) {
	needCgroups(t)
	isoNeedTools(t, "prlimit")
	u := isoAnyUser(t)[0] // root: the budget needs a cgroup
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := isoWorkspace(t, u)
			id := tag(t)
			report := filepath.Join(t.TempDir(), "report.json")
			script := `prlimit --pid $PPID --nofile=0:0; "$0" spin 4 "$SE_ISO_TAG"`
			args := append(isoArgs(t, w, mode, "--report-file", report, "--resource-limits", limits(256, 64, 2, 60)), "/bin/sh", "-c", script, probe)
			p := isoStart(t, w, u, []string{"SE_ISO_TAG=" + id}, args)
			t.Cleanup(func() { isoKillTagged(id) })
			if !p.wait(45 * time.Second) {
				_ = p.cmd.Process.Kill()
				<-p.done
				t.Fatalf("a 2 s CPU budget did not end the run within 45 s: %s", p.output())
			}
			var rep map[string]any
			b, _ := os.ReadFile(report)
			if err := json.Unmarshal(b, &rep); err != nil {
				t.Fatalf("report: %v (%q)", err, b)
			}
			if p.code != 152 || rep["ending"] != "cpu_budget" {
				t.Errorf("exit %d, ending %v: want the tree's CPU budget (152, cpu_budget): %s", p.code, rep["ending"], p.output())
			}
		})
	}
}

// TestProgramCannotStarveTheInit: a program that sets its parent's (the
// init's) RLIMIT_NOFILE to 0 while the init still has the seccomp
// listener to pass on (ETOOMANYREFS) does not make the run fail: the
// helper takes the listener from the init's file table instead, and the
// program's exit is the run's. Many starts at once, since the program must
// win a race against the init for the failure to show.
func TestProgramCannotStarveTheInit(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "prlimit")
	var wg sync.WaitGroup
	for worker := 0; worker < 6; worker++ {
		w := newWorkspace(t)
		pol := wsPolicy(t, w.root)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 15; i++ {
				r := runOnce(t, runOpts{env: w.env(), dir: w.root}, "--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--",
					"/bin/sh", "-c", `prlimit --pid $PPID --nofile=0:0 && echo starved`)
				if r.code != 0 || r.stdout != "starved\n" {
					t.Errorf("start %d: %v", i, r)
					return
				}
			}
		}()
	}
	wg.Wait()
}
