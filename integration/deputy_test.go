package integration

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The deputy rule: the supervisor makes the program's mediated socket
// calls with no more authority than the program has. These tests make the
// program try to borrow the supervisor's: host daemons' abstract sockets,
// its capabilities, its credentials, its view of the filesystem.

// randomSuffix names a test's abstract sockets and ports apart from
// another run's.
func randomSuffix(t *testing.T) string {
	t.Helper()
	b := make([]byte, 4)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// lines reads "key value" lines into a map.
func lines(stdout string) map[string]string {
	got := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(stdout), "\n") {
		k, v, _ := strings.Cut(line, " ")
		got[k] = v
	}
	return got
}

// sharedNetModes are the modes in which the program shares the host's
// network namespace: full network, and Landlock-only mode (with the
// network or without), as fsOpts and withNetwork give them.
var sharedNetModes = []struct {
	mode string
	full bool
}{{"exact", true}, {"landlock", false}, {"landlock", true}}

// sandboxArgs are a workspace_write run's arguments over w for mode, with
// the host's network when full; dashes ends them with "--" (the form every
// harness uses), else the program follows the options directly.
func sandboxArgs(t *testing.T, w *workspace, mode string, full, dashes bool, argv ...string) []string {
	t.Helper()
	pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []map[string]string{{"root": w.root}},
		"exclude_slash_tmp": true, "exclude_tmpdir_env_var": true, "network_access": full})
	args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--resource-limits", limitsNoCgroup}, netArgs(t, mode, full)...)
	if dashes {
		args = append(args, "--")
	}
	return append(args, argv...)
}

// TestHostAbstractSocketsUnreachable: with the host's network namespace
// shared, a host daemon's abstract socket stays out of reach however the
// program tries to make the name its own: it binds a socket of another
// type to the daemon's name (the kernel keeps one name per type) and
// connects or sends with the daemon's type; it binds a name holding a
// newline and a forged /proc/net/unix line that lists its own socket under
// the daemon's name. Its own abstract servers, stream and datagram, work.
// Root and nobody, full network and Landlock-only mode, with "--" (the
// supervisor holds a scoping domain: the kernel refuses with EPERM) and
// without (the supervisor holds the sandbox's socket for the call: EACCES).
func TestHostAbstractSocketsUnreachable(t *testing.T) {
	needLandlock(t)
	sfx := randomSuffix(t)
	stream, dgram := "@se-test-daemon-"+sfx, "@se-test-dgramd-"+sfx
	hostServer(t, nil, "unixserve", stream)
	dgramLog := filepath.Join(t.TempDir(), "dgram.log")
	hostServer(t, nil, "dgramserve", dgram, dgramLog)
	if out := direct(t, isoNobody.cred, "unixconnect", stream); out != "ok" {
		t.Fatalf("the daemon's abstract socket is not reachable without the sandbox: %s", out)
	}
	script := waitFor + `P="$0"; W="$1"
echo "direct $("$P" unixconnect "$2")"
echo "squat-dgram $("$P" abstractsquat dgram "$2")"
echo "forge $("$P" abstractsquat forge "$2")"
echo "squat-stream $("$P" abstractsquat stream "$3")"
"$P" unixserve "$4" once > "$W/own.up" & listening "$W/own.up"; echo "own $("$P" unixconnect "$4")"; wait
"$P" dgramserve "$5" "$W/own.log" > "$W/owndgram.up" & listening "$W/owndgram.up"
for how in sendto sendmsg connect; do echo "owndgram-$how $("$P" unixsend $how "$5")"; done
logged "$W/own.log" 3; kill $!; echo "owndgram-log $(tr '\n' ' ' < "$W/own.log")"`
	for _, u := range isoAnyUser(t) {
		for _, m := range sharedNetModes {
			for _, dashes := range []bool{true, false} {
				name := u.name + "/" + m.mode + "/full=" + strconv.FormatBool(m.full) + "/dashes=" + strconv.FormatBool(dashes)
				t.Run(name, func(t *testing.T) {
					w := newWorkspace(t)
					if u.cred != nil {
						chownPaths(t, int(u.cred.Uid), int(u.cred.Gid), w.root)
					}
					own := "@se-test-own-" + randomSuffix(t)
					// Landlock-only mode keeps a root's top level from gaining entries.
					src := filepath.Join(w.root, "src")
					args := sandboxArgs(t, w, m.mode, m.full, dashes, "/bin/sh", "-c", script, probe, src, stream, dgram, own, own+"-dgram")
					r := run(t, runOpts{env: w.env(), dir: w.root, cred: u.cred}, args...)
					if r.code != 0 {
						t.Fatalf("run: %v", r)
					}
					got := lines(r.stdout)
					for _, k := range []string{"direct", "squat-dgram", "forge", "squat-stream"} {
						if v := got[k]; v == "" || v == "ok" {
							t.Errorf("%s: %q, want refused (%v)", k, v, r)
						}
					}
					// A datagram sent from outside after the run: once it is
					// logged, so is anything the run sent.
					if out := direct(t, nil, "unixsend", "sendto", dgram); out != "ok" {
						t.Fatalf("the datagram daemon cannot be reached from outside: %s", out)
					}
					var b []byte
					if !isoPoll(10*time.Second, func() bool { b, _ = os.ReadFile(dgramLog); return strings.Contains(string(b), "sent-by-sendto") }) {
						t.Fatalf("the datagram daemon did not log a datagram from outside: %q", b)
					}
					if strings.Contains(string(b), "sent-by-squat") {
						t.Errorf("the datagram daemon received the program's datagram: %q", b)
					}
					_ = os.Remove(dgramLog)
					for _, k := range []string{"own", "owndgram-sendto", "owndgram-sendmsg", "owndgram-connect"} {
						if got[k] != "ok" {
							t.Errorf("%s: %q, want ok (%v)", k, got[k], r)
						}
					}
					for _, how := range []string{"sendto", "sendmsg", "connect"} {
						if !strings.Contains(got["owndgram-log"], "sent-by-"+how) {
							t.Errorf("the program's own datagram server lacks sent-by-%s: %q", how, got["owndgram-log"])
						}
					}
				})
			}
		}
	}
}

// TestPassedInAbstractSocketIsTheSandboxs: an abstract listener made
// outside the sandbox and passed in (--keep-fd) is held by the program, so
// a connect to its name reaches it (the program could accept on it
// anyway); the name of a listener nobody in the sandbox holds is refused
// (TestHostAbstractSocketsUnreachable). Root and nobody, full network and
// Landlock-only mode.
func TestPassedInAbstractSocketIsTheSandboxs(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		for _, m := range sharedNetModes {
			t.Run(u.name+"/"+m.mode+"/full="+strconv.FormatBool(m.full), func(t *testing.T) {
				name := "@se-test-passed-" + randomSuffix(t)
				fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
				if err != nil {
					t.Fatal(err)
				}
				f := os.NewFile(uintptr(fd), "passed")
				defer f.Close()
				if err := syscall.Bind(fd, &syscall.SockaddrUnix{Name: name}); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Listen(fd, 4); err != nil {
					t.Fatal(err)
				}
				w := newWorkspace(t)
				if u.cred != nil {
					chownPaths(t, int(u.cred.Uid), int(u.cred.Gid), w.root)
				}
				args := sandboxArgs(t, w, m.mode, m.full, false, "--keep-fd", "3", "--", probe, "unixconnect", name)
				r := run(t, runOpts{env: w.env(), dir: w.root, cred: u.cred, extra: []*os.File{f}}, args...)
				if probeResult(r) != "ok" {
					t.Errorf("connect to the passed-in listener's name: %v, want ok (the program holds it)", r)
				}
			})
		}
	}
}

// prohibitMarked runs the helper in a network namespace of its own where
// packets marked 42 have no route (EACCES), for u: a datagram that leaves
// with the mark says the mark was applied.
func prohibitMarked(u isoUser) []string {
	via := []string{"unshare", "-n", "sh", "-c", `ip link set lo up && ip rule add pref 5 fwmark 42 prohibit && ip rule del pref 0 &&
ip rule add pref 10 lookup local && echo "host-mark $("$0" udpcmsg mark 127.0.0.1 9)" && shift && exec "$@"`, probe, "--"}
	if u.cred != nil {
		via = append(via, "setpriv", "--reuid="+strconv.Itoa(int(u.cred.Uid)), "--regid="+strconv.Itoa(int(u.cred.Gid)), "--clear-groups")
	}
	return via
}

// TestMediatedSendsCarryNoPrivilege: a send the supervisor makes for the
// program carries none of the supervisor's privileges: a datagram whose
// ancillary data asks for a firewall mark (SO_MARK, which setsockopt
// refuses the program) is refused with EPERM instead of leaving marked, and
// a netlink message to another process's socket (CAP_NET_ADMIN) is refused
// with EPERM and never arrives; the ancillary data QUIC stacks send (ECN
// through IP_TOS, IP_PKTINFO, UDP_SEGMENT) still goes. Root (whose
// supervisor has every capability) and nobody, full network in exact and
// Landlock-only mode.
func TestMediatedSendsCarryNoPrivilege(t *testing.T) {
	isoNeedRoot(t)
	isoNeedTools(t, "unshare", "ip", "setpriv")
	var rnd [2]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatal(err)
	}
	port := 0x7e000000 | int(rnd[0])<<8 | int(rnd[1])
	nlLog := filepath.Join(t.TempDir(), "netlink.log")
	hostServer(t, nil, "nlserve", strconv.Itoa(port), nlLog)
	// A message root sends from outside is received: once its sequence
	// number is in the log, so is whatever was sent before it.
	fences := 0
	fence := func() string {
		t.Helper()
		fences++
		seq := strconv.Itoa(1000 + fences)
		if out := direct(t, nil, "nlsend", strconv.Itoa(port), seq); out != "ok" {
			t.Fatalf("root outside the sandbox cannot send to the netlink listener: %s", out)
		}
		var got string
		if !isoPoll(10*time.Second, func() bool {
			b, _ := os.ReadFile(nlLog)
			got = string(b)
			return strings.Contains(got, "received seq "+seq+"\n")
		}) {
			t.Fatalf("the netlink listener did not receive root's message %s: %q", seq, got)
		}
		return got
	}
	fence()
	udpPort := 20000 + port&0x7fff
	udpLog := filepath.Join(t.TempDir(), "udp.log")
	hostServer(t, nil, "udprecv", strconv.Itoa(udpPort), udpLog)
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				if u.cred != nil {
					chownPaths(t, int(u.cred.Uid), int(u.cred.Gid), w.root)
				}
				script := `P="$0"; echo "nlsend $("$P" nlsend "$1")"
for k in tos pktinfo segment; do echo "udp-$k $("$P" udpcmsg $k 127.0.0.1 "$2")"; done`
				r := run(t, runOpts{env: w.env(), dir: w.root, cred: u.cred}, sandboxArgs(t, w, mode, true, true, "/bin/sh", "-c", script, probe, strconv.Itoa(port), strconv.Itoa(udpPort))...)
				got := lines(r.stdout)
				if r.code != 0 || got["nlsend"] != "EPERM" {
					t.Errorf("netlink message to another process: %q, want EPERM (%v)", got["nlsend"], r)
				}
				if got := fence(); strings.Contains(got, "received seq 1\n") {
					t.Errorf("the host's netlink listener received the program's message: %q", got)
					_ = os.Remove(nlLog)
				}
				for _, k := range []string{"udp-tos", "udp-pktinfo", "udp-segment"} {
					if got[k] != "ok" {
						t.Errorf("%s: %q, want ok (%v)", k, got[k], r)
					}
				}
				// The mark, where a marked datagram finds no route.
				marked := run(t, runOpts{env: w.env(), dir: w.root, via: prohibitMarked(u)},
					sandboxArgs(t, w, mode, true, true, "/bin/sh", "-c", `echo "mark $("$0" udpcmsg mark 127.0.0.1 9)"; echo "plain $("$0" udpcmsg none 127.0.0.1 9)"`, probe)...)
				got = lines(marked.stdout)
				if got["host-mark"] != "EACCES" {
					t.Fatalf("outside the sandbox a marked datagram was not refused its route: %v", marked)
				}
				if marked.code != 0 || got["mark"] != "EPERM" || got["plain"] != "ok" {
					t.Errorf("SO_MARK in a mediated sendmsg: %q, an unmarked one %q; want EPERM and ok (%v)", got["mark"], got["plain"], marked)
				}
			})
		}
	}
	runs := len(isoAnyUser(t)) * len(fsModes)
	var b []byte
	isoPoll(10*time.Second, func() bool {
		b, _ = os.ReadFile(udpLog)
		return strings.Count(string(b), "cmsg-segment") >= 2*runs && strings.Count(string(b), "cmsg-tos") >= runs &&
			strings.Count(string(b), "cmsg-pktinfo") >= runs
	})
	for _, want := range []string{"cmsg-tos", "cmsg-pktinfo"} {
		if n := strings.Count(string(b), want); n < runs {
			t.Errorf("the UDP receiver got %q %d times of %d: %q", want, n, runs, b)
		}
	}
	if n := strings.Count(string(b), "cmsg-segment"); n < 2*runs {
		t.Errorf("the UDP receiver got %d segments of %d UDP_SEGMENT sends, want two each", n, runs)
	}
}

// TestSocketCredentialsOnlyTheProgramsOwn: a mediated send may carry
// credentials (SCM_CREDENTIALS, as GLib's D-Bus client sends them) when
// they are the program's own pid, uid and gid; the receiver sees the
// program's uid and gid. A claim of another pid gets EPERM, the kernel's
// answer to a program without CAP_SYS_ADMIN. Root and nobody, exact and
// Landlock-only mode.
func TestSocketCredentialsOnlyTheProgramsOwn(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := newWorkspace(t)
				if u.cred != nil {
					chownPaths(t, int(u.cred.Uid), int(u.cred.Gid), w.root)
				}
				src := filepath.Join(w.root, "src")
				script := waitFor + `P="$0"; W="$1"
"$P" unixrecvcred "$W/own.sock" > "$W/own.out" & listening "$W/own.out"; echo "own $("$P" unixsendcred "$W/own.sock" own)"; wait
echo "received $(tail -n 1 "$W/own.out")"
"$P" unixrecvcred "$W/other.sock" > "$W/other.up" & listening "$W/other.up"; echo "other $("$P" unixsendcred "$W/other.sock" other)"; kill $! 2>/dev/null; true`
				args := append(append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--resource-limits", limitsNoCgroup},
					fsOpts(t, mode)...), "--", "/bin/sh", "-c", script, probe, src)
				r := run(t, runOpts{env: w.env(), dir: w.root, cred: u.cred}, args...)
				got := lines(r.stdout)
				uid, gid := 0, 0
				if u.cred != nil {
					uid, gid = int(u.cred.Uid), int(u.cred.Gid)
				}
				if r.code != 0 || got["own"] != "ok" {
					t.Errorf("the program's own credentials: %q, want ok (%v)", got["own"], r)
				}
				// "creds pid P uid U gid G"
				if f := strings.Fields(got["received"]); len(f) != 7 || f[4] != strconv.Itoa(uid) || f[6] != strconv.Itoa(gid) {
					t.Errorf("the receiver saw %q, want uid %d gid %d", got["received"], uid, gid)
				}
				if got["other"] != "EPERM" {
					t.Errorf("another pid's credentials: %q, want EPERM (%v)", got["other"], r)
				}
			})
		}
	}
}

// TestSocketLookupAsTheProgram: the supervisor looks a socket's pathname up
// as the program would, with none of its own capabilities: a root
// program's connect to a socket anyone may write, in a directory of the
// workspace only its owner (nobody) may search, is refused (EACCES), as
// is one to a socket only nobody may write. Exact and Landlock-only mode.
func TestSocketLookupAsTheProgram(t *testing.T) {
	isoNeedRoot(t)
	for _, mode := range fsModes {
		t.Run(mode, func(t *testing.T) {
			w := newWorkspace(t)
			private := filepath.Join(w.root, "private")
			mustMkdir(t, private)
			hidden, owned := filepath.Join(private, "s.sock"), filepath.Join(w.root, "owned.sock")
			hostServer(t, nil, "unixserve", hidden)
			hostServer(t, nil, "unixserve", owned)
			nobody := int(isoNobody.cred.Uid)
			for p, perm := range map[string]os.FileMode{hidden: 0o777, private: 0o700, owned: 0o700} {
				if err := os.Chown(p, nobody, nobody); err != nil {
					t.Fatal(err)
				}
				if err := os.Chmod(p, perm); err != nil {
					t.Fatal(err)
				}
			}
			if out := direct(t, isoNobody.cred, "unixconnect", hidden); out != "ok" {
				t.Fatalf("nobody cannot reach its own socket: %s", out)
			}
			script := `echo "hidden $("$0" unixconnect "$1")"; echo "owned $("$0" unixconnect "$2")"`
			args := append(append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root)}, fsOpts(t, mode)...),
				"--", "/bin/sh", "-c", script, probe, hidden, owned)
			r := run(t, runOpts{env: w.env(), dir: w.root}, args...)
			got := lines(r.stdout)
			if r.code != 0 || got["hidden"] != "EACCES" || got["owned"] != "EACCES" {
				t.Errorf("a socket in a directory root cannot search: %q; one root cannot write: %q; want EACCES both (%v)", got["hidden"], got["owned"], r)
			}
		})
	}
}

// TestBlockedMediatedSendEndsWithTheRun: a send the supervisor makes for
// the program (on the program's socket) that blocks for good, a datagram
// to the socket's own full queue, ends the supervisor's wait when the run
// ends: the timeout ends the run with 124, and the helper returns. It
// waited for the send for ever, past the timeout, its run's cgroup and
// files still there. "flip": another thread flips O_NONBLOCK meanwhile; a
// send the supervisor took for non-blocking, once the flag was gone,
// waited on the goroutine that receives every call. Both modes, root and
// nobody (with -short, each user one mode).
func TestBlockedMediatedSendEndsWithTheRun(t *testing.T) {
	isoNeedTools(t, "python3")
	limits := `{"max_memory_mb":0,"max_pids":0,"max_disk_mb":0,"cpu_time_secs":0,"timeout_secs":2}`
	// Blocking sends, and non-blocking ones while another thread flips
	// O_NONBLOCK on the open file (which the supervisor's copy shares):
	// a send the supervisor took for non-blocking must not wait once the
	// flag is gone.
	script := `import fcntl, os, socket, sys, threading
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("src/self.sock")
print("bound", flush=True)
if sys.argv[1] == "flip":
    def flip():
        fl = fcntl.fcntl(s, fcntl.F_GETFL)
        while True:
            fcntl.fcntl(s, fcntl.F_SETFL, fl | os.O_NONBLOCK)
            fcntl.fcntl(s, fcntl.F_SETFL, fl & ~os.O_NONBLOCK)
    threading.Thread(target=flip, daemon=True).start()
while True:
    try:
        s.sendto(b"x" * 4096, "src/self.sock")
    except BlockingIOError:
        pass
`
	users := isoAnyUser(t)
	for i, u := range users {
		for _, mode := range shortLayouts(i, len(users), fsModes...) {
			for _, how := range []string{"block", "flip"} {
				t.Run(u.name+"/"+mode+"/"+how, func(t *testing.T) {
					w := newWorkspace(t)
					if u.cred != nil {
						chownPaths(t, int(u.cred.Uid), int(u.cred.Gid), w.root)
					}
					args := append(append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root), "--resource-limits", limits},
						fsOpts(t, mode)...), "--", "python3", "-c", script, how)
					r := run(t, runOpts{env: w.env(), dir: w.root, cred: u.cred}, args...)
					if r.code != 124 || r.stdout != "bound\n" {
						t.Errorf("want the timeout's 124 after bound: %v", r)
					}
				})
			}
		}
	}
}
