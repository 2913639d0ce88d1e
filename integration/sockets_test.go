package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// hostServer runs the probe with args on the host (outside any sandbox),
// as root, waits until it says "listening", and stops it at the end of the
// test. via, when set, runs it through a launcher (unshare -n).
func hostServer(t *testing.T, via []string, args ...string) {
	t.Helper()
	hostServerIn(t, "", via, args...)
}

// hostServerIn is hostServer with dir as the server's working directory.
func hostServerIn(t *testing.T, dir string, via []string, args ...string) {
	t.Helper()
	argv := append(append(append([]string(nil), via...), probe), args...)
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "listening\n" {
		t.Fatalf("host server %v: %q", args, line)
	}
}

// withNetwork are the helper options that let a workspace_write policy with
// network_access have the host's network (the default seccomp profile
// narrows it to none).
var withNetwork = []string{"--seccomp-profile", `{"blocked_syscalls":[],"allow_namespaces":false,"allow_network_sockets":true,"log_only":false}`}

// netArgs are fsOpts for mode, with the host's network when full.
func netArgs(t *testing.T, mode string, full bool) []string {
	t.Helper()
	opts := fsOpts(t, mode)
	if full {
		opts = append(append([]string(nil), opts...), withNetwork...)
	}
	return opts
}

// direct runs the probe with args outside any sandbox, as cred (nil: the
// test's user), and returns its verdict.
func direct(t *testing.T, cred *syscall.Credential, args ...string) string {
	t.Helper()
	cmd := exec.Command(probe, args...)
	if cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: cred}
	}
	out, _ := cmd.Output()
	return strings.TrimSpace(string(out))
}

// daemonSockets is a host's daemons seen from a sandbox: listening unix
// sockets outside every root, each reached another way.
type daemonSockets struct {
	dir    string // outside/daemon: the stream daemon's directory
	stream string // outside/daemon/d.sock
	link   string // outside/link.sock: a hard link to it
	inLink string // a hard link to it inside the workspace
	moved  string // a daemon's socket whose directory was renamed after it bound
	rel    string // a daemon's socket bound by a relative name
	netns  string // bound in another network namespace
	dgram  string // a datagram daemon; what it receives goes to dgramLog
	late   string // bound only once the program runs
	// preRename is a daemon's socket whose directory is renamed once the
	// program runs; postRename its name then.
	preRename, postRename string
	dgramLg               string
}

// newDaemonSockets starts the daemons for workspace w.
func newDaemonSockets(t *testing.T, w *workspace) *daemonSockets {
	t.Helper()
	d := &daemonSockets{dir: filepath.Join(w.out, "daemon")}
	mustMkdir(t, d.dir)
	d.stream = filepath.Join(d.dir, "d.sock")
	hostServer(t, nil, "unixserve", d.stream)
	d.link = filepath.Join(w.out, "link.sock")
	d.inLink = filepath.Join(w.root, "src", "in-link.sock")
	for _, l := range []string{d.link, d.inLink} {
		if err := os.Link(d.stream, l); err != nil {
			t.Fatal(err)
		}
	}
	// Bound, then its directory renamed: the kernel's list of bound
	// sockets still shows the old name.
	old := filepath.Join(w.out, "before")
	mustMkdir(t, old)
	hostServer(t, nil, "unixserve", filepath.Join(old, "m.sock"))
	if err := os.Rename(old, filepath.Join(w.out, "after")); err != nil {
		t.Fatal(err)
	}
	d.moved = filepath.Join(w.out, "after", "m.sock")
	// Bound by a relative name: the kernel's list shows just that name.
	relDir := filepath.Join(w.out, "rel")
	mustMkdir(t, relDir)
	hostServerIn(t, relDir, nil, "unixserve", "r.sock")
	d.rel = filepath.Join(relDir, "r.sock")
	d.netns = filepath.Join(w.out, "netns.sock")
	hostServer(t, []string{"unshare", "-n"}, "unixserve", d.netns)
	d.dgram = filepath.Join(w.out, "dgram.sock")
	d.dgramLg = filepath.Join(w.out, "dgram.log")
	hostServer(t, nil, "dgramserve", d.dgram, d.dgramLg)
	d.late = filepath.Join(w.out, "late.sock")
	mustMkdir(t, filepath.Join(w.out, "pre"))
	d.preRename, d.postRename = filepath.Join(w.out, "pre", "x.sock"), filepath.Join(w.out, "post", "x.sock")
	hostServer(t, nil, "unixserve", d.preRename)
	// Anyone may write them: only the sandbox stands in the way.
	for _, p := range []string{d.stream, d.moved, d.rel, d.netns, d.dgram, d.preRename} {
		if err := os.Chmod(p, 0o777); err != nil {
			t.Fatal(err)
		}
	}
	return d
}

// TestDaemonSocketsByRule: a host daemon's listening unix socket outside
// the writable roots is refused however the program names it (its path, a
// relative name, a hard link outside or inside the workspace, a directory
// renamed since it bound, before the start or during the run), whatever
// network namespace bound it, and when it
// is bound only after the program started, or was bound by a relative
// name; datagram daemons get nothing by
// sendto, sendmsg, sendmmsg, a connected socket or a socketpair's socket;
// meanwhile the program's own stream and datagram sockets in its workspace,
// a socketpair, and passing a descriptor between its own processes work.
// Exact and Landlock-only mode, network none and full, root and nobody.
func TestDaemonSocketsByRule(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			for _, network := range []string{"none", "full"} {
				t.Run(u.name+"/"+mode+"/"+network, func(t *testing.T) {
					w := newWorkspace(t)
					d := newDaemonSockets(t, w)
					if u.cred != nil {
						chownPaths(t, int(u.cred.Uid), int(u.cred.Gid), w.root)
					}
					// Outside the sandbox every one of them is reachable.
					for _, s := range []string{d.stream, d.link, d.moved, d.rel, d.netns} {
						if out := direct(t, u.cred, "unixconnect", s); out != "ok" {
							t.Fatalf("%s not reachable without the sandbox: %s", s, out)
						}
					}
					pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
						"exclude_slash_tmp": true, "exclude_tmpdir_env_var": true, "network_access": network == "full"})
					src := filepath.Join(w.root, "src")
					mark := filepath.Join(src, "started")
					script := waitFor + `P="$0"; : > "$1"
echo "path $("$P" unixconnect "$2")"
echo "relative $(cd "$(dirname "$2")" && "$P" unixconnect "$(basename "$2")")"
echo "link $("$P" unixconnect "$3")"
echo "inlink $("$P" unixconnect "$4")"
echo "moved $("$P" unixconnect "$5")"
echo "netns $("$P" unixconnect "$6")"
echo "relbound $("$P" unixconnect "${10}")"
for how in sendto sendmsg sendmmsg connect pair; do echo "dgram-$how $("$P" unixsend $how "$7")"; done
i=0; while [ ! -S "$8" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
echo "late $("$P" unixconnect "$8")"
i=0; while [ ! -S "${11}" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i+1)); done
echo "renamed-late $("$P" unixconnect "${11}")"
"$P" unixserve "$9/own.sock" once > "$9/own.up" & listening "$9/own.up"
echo "own $("$P" unixconnect "$9/own.sock")"; wait
"$P" dgramserve "$9/own-dgram.sock" "$9/own-dgram.log" > "$9/own-dgram.up" & listening "$9/own-dgram.up"
for how in sendto sendmsg sendmmsg connect pair; do echo "owndgram-$how $("$P" unixsend $how "$9/own-dgram.sock")"; done
logged "$9/own-dgram.log" 6; kill $!; echo "owndgram-log $(tr '\n' ' ' < "$9/own-dgram.log")"
echo secret-of-the-file > "$9/f"; "$P" unixrecvfd "$9/fd.sock" > "$9/fd.out" & listening "$9/fd.out"
echo "sendfd $("$P" unixsendfd "$9/fd.sock" "$9/f")"; wait; echo "recvfd $(tr '\n' ' ' < "$9/fd.out")"
echo "socketpair $("$P" socketpair)"`
					args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--resource-limits", limitsNoCgroup}, netArgs(t, mode, network == "full")...)
					args = append(args, "--", "/bin/sh", "-c", script, probe, mark, d.stream, d.link, d.inLink, d.moved, d.netns, d.dgram, d.late, src, d.rel, d.postRename)
					p := isoStart(t, w, u, nil, args)
					// The late daemon binds once the program runs.
					for i := 0; i < 400; i++ {
						if _, err := os.Stat(mark); err == nil {
							break
						}
						time.Sleep(25 * time.Millisecond)
					}
					hostServer(t, nil, "unixserve", d.late)
					_ = os.Chmod(d.late, 0o777)
					if err := os.Rename(filepath.Dir(d.preRename), filepath.Dir(d.postRename)); err != nil {
						t.Fatal(err)
					}
					if !p.wait(60 * time.Second) {
						t.Fatalf("the run did not end within 60 s: %s", p.output())
					}
					if p.code != 0 {
						t.Fatalf("run: exit %d: %s", p.code, p.output())
					}
					b, _ := os.ReadFile(p.stdout)
					stdout := string(b)
					got := map[string]string{}
					for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
						k, v, _ := strings.Cut(line, " ")
						got[k] = v
					}
					for _, k := range []string{"path", "relative", "relbound", "link", "inlink", "moved", "renamed-late", "netns", "late",
						"dgram-sendto", "dgram-sendmsg", "dgram-sendmmsg", "dgram-connect", "dgram-pair"} {
						if v, ok := got[k]; !ok || v == "ok" {
							t.Errorf("%s: %q, want refused (%q)", k, v, stdout)
						}
					}
					if b, err := os.ReadFile(d.dgramLg); err == nil && len(b) > 0 {
						t.Errorf("the datagram daemon received %q", b)
					}
					for _, k := range []string{"own", "owndgram-sendto", "owndgram-sendmsg", "owndgram-sendmmsg", "owndgram-connect", "owndgram-pair", "sendfd", "socketpair"} {
						if got[k] != "ok" {
							t.Errorf("%s: %q, want ok (%s)", k, got[k], p.output())
						}
					}
					for _, want := range []string{"sent-by-sendto", "sent-by-sendmsg", "sent-by-connect", "sent-by-pair"} {
						if !strings.Contains(got["owndgram-log"], want) {
							t.Errorf("the program's own datagram server lacks %q: %q", want, got["owndgram-log"])
						}
					}
					if strings.Count(got["owndgram-log"], "sent-by-sendmmsg") != 2 {
						t.Errorf("sendmmsg: %q", got["owndgram-log"])
					}
					if !strings.Contains(got["recvfd"], "received: secret-of-the-file") {
						t.Errorf("descriptor passing: %q", got["recvfd"])
					}
				})
			}
		}
	}
}

// TestDaemonSocketRefusalsRecorded: a refused connect is in the denial log
// with the path the program gave and where it led, and the report counts
// it and says how sockets are kept out of reach.
func TestDaemonSocketRefusalsRecorded(t *testing.T) {
	isoNeedRoot(t)
	w := newWorkspace(t)
	d := newDaemonSockets(t, w)
	log := filepath.Join(t.TempDir(), "denials.jsonl")
	rep := filepath.Join(t.TempDir(), "report.json")
	r := run(t, runOpts{env: w.env(), dir: filepath.Dir(d.stream)}, "--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root),
		"--log-denials", log, "--report-file", rep, "--", "/bin/sh", "-c", `cd "$1" && "$0" unixconnect d.sock`, probe, filepath.Dir(d.stream))
	if probeResult(r) != "EACCES" {
		t.Fatalf("relative connect: %v", r)
	}
	lines := readLines(t, log)
	if len(lines) != 1 || lines[0]["kind"] != "unix_socket" || lines[0]["syscall"] != "connect" || lines[0]["errno"] != "EACCES" ||
		lines[0]["address"] != "d.sock" || lines[0]["resolved"] != d.stream {
		t.Errorf("denial log: %v", lines)
	}
	b, err := os.ReadFile(rep)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"unix_socket": 1`) || !strings.Contains(string(b), `"daemon_sockets": "mediated:`) {
		t.Errorf("report: %s", b)
	}
}

// TestAbstractSockets: an abstract socket a host daemon bound is refused
// everywhere, while the program's own abstract server and client work: in
// a network namespace of the program's own (exact mode, no network) only
// its own exist; with the host's namespace shared (full network, or
// Landlock-only mode) the supervisor connects only to a name a socket of
// the sandbox's processes is bound to.
func TestAbstractSockets(t *testing.T) {
	isoNeedRoot(t)
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := "@se-test-daemon-" + hex.EncodeToString(b)
	hostServer(t, nil, "unixserve", name)
	if out := direct(t, nil, "unixconnect", name); out != "ok" {
		t.Fatalf("the host's abstract socket is not reachable without the sandbox: %s", out)
	}
	for _, mode := range fsModes {
		for _, network := range []bool{false, true} {
			w := newWorkspace(t)
			pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
				"exclude_slash_tmp": true, "exclude_tmpdir_env_var": true, "network_access": network})
			own := "@se-test-own-" + hex.EncodeToString(b)
			r := w.sandbox(t, pol, netArgs(t, mode, network), "/bin/sh", "-c",
				waitFor+`echo "daemon $("$0" unixconnect "$1")"; "$0" unixserve "$2" once > "$3" & listening "$3"; echo "own $("$0" unixconnect "$2")"; kill $! 2>/dev/null; true`,
				probe, name, own, filepath.Join(w.root, "src", "own.up"))
			if strings.Contains(r.stdout, "daemon ok") || !strings.Contains(r.stdout, "own ok") || r.code != 0 {
				t.Errorf("%s, network %v: %v, want the daemon refused and the program's own reached", mode, network, r)
			}
			// Where the host's namespace is shared the refusal is the
			// supervisor's, and recorded.
			if mode == "landlock" || network {
				log := filepath.Join(t.TempDir(), "denials.jsonl")
				w.sandbox(t, pol, append(netArgs(t, mode, network), "--log-denials", log), probe, "unixconnect", name)
				if lines := readLines(t, log); len(lines) != 1 || lines[0]["address"] != name {
					t.Errorf("%s, network %v: denial log %v", mode, network, lines)
				}
			}
		}
	}
}

// TestSocketAddressRaceNeverEscapes: the program flips the address a
// connect reads between its own socket and a daemon's, from another
// process, all along 3000 connects (500 with -short: in an emulated guest
// on a busy machine 3000 took a minute): the supervisor reads the address
// once and connects to what it checked, so no connection reaches the
// daemon.
func TestSocketAddressRaceNeverEscapes(t *testing.T) {
	isoNeedRoot(t)
	connects := "3000"
	if testing.Short() {
		connects = "500"
	}
	w := newWorkspace(t)
	src := filepath.Join(w.root, "src")
	mark := filepath.Join(src, "started")
	daemon := filepath.Join(w.out, "d.sock")
	script := waitFor + `: > "$3"; while [ ! -S "$2" ]; do sleep 0.05; done; "$0" unixserve "$1" > "$1.up" & listening "$1.up"; "$0" raceaddr "$1" "$2" ` + connects + `; kill $!`
	done := async(func() result {
		return w.sandbox(t, wsPolicy(t, w.root), nil, "/bin/sh", "-c", script, probe, filepath.Join(src, "own.sock"), daemon, mark)
	})
	for i := 0; i < 400; i++ {
		if _, err := os.Stat(mark); err == nil {
			break
		}
		time.Sleep(25 * time.Millisecond)
	}
	// Bound after the start: no snapshot of sockets can know it.
	hostServer(t, nil, "unixserve", daemon)
	r := <-done
	if !strings.Contains(r.stdout, "reached-b 0 ") {
		t.Errorf("a connection reached the daemon: %v", r)
	}
	t.Logf("%s", strings.TrimSpace(r.stdout))
}

// TestVanishedSocketNeverFailsARun: a socket outside the roots that is
// deleted and bound again all along while runs start never fails one: the
// helper takes no list of sockets at start. 2,000 runs of /bin/true in
// exact mode (2 at a time) with 8 sockets cycling every millisecond or so.
func TestVanishedSocketNeverFailsARun(t *testing.T) {
	isoNeedRoot(t)
	if testing.Short() {
		t.Skip("2,000 runs")
	}
	w := newWorkspace(t)
	var stop atomic.Bool
	var wg sync.WaitGroup
	for i := 0; i < 8; i++ {
		wg.Add(1)
		p := filepath.Join(w.out, "vanish-"+string(rune('a'+i))+".sock")
		go func() {
			defer wg.Done()
			for !stop.Load() {
				fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					return
				}
				if syscall.Bind(fd, &syscall.SockaddrUnix{Name: p}) == nil {
					time.Sleep(time.Millisecond)
				}
				_ = os.Remove(p)
				syscall.Close(fd)
			}
		}()
	}
	defer func() { stop.Store(true); wg.Wait() }()
	// Two runs at a time, each in a workspace of its own (runs sharing
	// one are another matter: the placeholder registry's).
	const runs, parallel = 2000, 2
	slots := make(chan *workspace, parallel)
	slots <- w
	for i := 1; i < parallel; i++ {
		slots <- newWorkspace(t)
	}
	var failed atomic.Int64
	var first atomic.Value
	var runsWG sync.WaitGroup
	for i := 0; i < runs; i++ {
		ws := <-slots
		runsWG.Add(1)
		go func() {
			defer func() { slots <- ws; runsWG.Done() }()
			r := run(t, runOpts{env: ws.env(), dir: ws.root}, "--sandbox-policy-cwd", ws.root, "--sandbox-policy", wsPolicy(t, ws.root), "--fs-mode", "exact", "--", "/bin/true")
			if r.code != 0 {
				failed.Add(1)
				first.CompareAndSwap(nil, r.String())
			}
		}()
	}
	runsWG.Wait()
	if n := failed.Load(); n > 0 {
		t.Errorf("%d of %d runs failed; the first: %v", n, runs, first.Load())
	}
}
