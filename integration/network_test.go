package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"sandbox-executable/internal/testcap"
)

// remote is a host of the test's own: a network namespace joined to this
// one by a veth pair, running an HTTP server on ports 80, 443 and 8443 and a
// UDP sink, with names given to it in a hosts file the helper sees as
// /etc/hosts (the helper runs in a mount namespace of the test's).
type remote struct {
	ns, hostIf, addr string
	hosts            string // the hosts file
	udpLog           string // what the UDP sink received
}

func newRemote(t *testing.T) *remote {
	t.Helper()
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "needs root: makes a network namespace and a veth pair")
	}
	for _, tool := range []string{"ip", "unshare", "curl"} {
		if _, err := exec.LookPath(tool); err != nil {
			testcap.Skipf(t, testcap.Installed, "needs %s", tool)
		}
	}
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	// A /30 of TEST-NET-3 (documentation addresses, which no host
	// uses): to the proxy a public address, which names matched by a
	// wildcard may reach (a private one they may not).
	quad := int(b[0]) % 64 * 4
	r := &remote{ns: "se-remote-" + id, hostIf: "seh" + id, addr: fmt.Sprintf("203.0.113.%d", quad+2)}
	sh := func(cmd string) {
		t.Helper()
		if out, err := exec.Command("/bin/sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	sh("ip netns add " + r.ns)
	t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", r.ns).Run() })
	sh(fmt.Sprintf("ip link add %s type veth peer name ser%s", r.hostIf, id))
	t.Cleanup(func() { _ = exec.Command("ip", "link", "del", r.hostIf).Run() })
	sh(fmt.Sprintf("ip link set ser%s netns %s", id, r.ns))
	sh(fmt.Sprintf("ip addr add 203.0.113.%d/30 dev %s && ip link set %s up", quad+1, r.hostIf, r.hostIf))
	sh(fmt.Sprintf("ip netns exec %s sh -c 'ip addr add %s/30 dev ser%s && ip link set ser%s up && ip link set lo up'", r.ns, r.addr, id, id))

	dir := t.TempDir()
	r.udpLog = filepath.Join(dir, "udp.log")
	for _, srv := range [][]string{
		{"httpserve", "80", "plain-80"},
		{"httpserve", "443", "tls-like-443"},
		{"httpserve", "8443", "other-8443"},
		{"udprecv", "5353", r.udpLog},
	} {
		cmd := exec.Command("ip", append([]string{"netns", "exec", r.ns, probe}, srv...)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "listening\n" {
			t.Fatalf("remote %v: %q", srv, line)
		}
	}
	r.hosts = filepath.Join(dir, "hosts")
	var hosts strings.Builder
	hosts.WriteString("127.0.0.1 localhost\n")
	for _, n := range []string{"allowed.test", "denied.test", "wild.test", "x.wild.test", "evil-wild.test", "wild.test.evil"} {
		fmt.Fprintf(&hosts, "%s %s\n", r.addr, n)
	}
	write(t, r.hosts, hosts.String())
	// The host itself reaches the remote: the probe is sound.
	if out, err := exec.Command("curl", "-s", "-m", "5", "http://"+r.addr+":80/").Output(); err != nil || string(out) != "plain-80" {
		t.Fatalf("the remote is not reachable from the host: %v %q", err, out)
	}
	return r
}

// sandbox runs the helper in a mount namespace where /etc/hosts is the
// remote's hosts file.
func (r *remote) sandbox(t *testing.T, w *workspace, policy string, opts []string, script string) result {
	t.Helper()
	args := append([]string{"-m", "--propagation", "private", "/bin/sh", "-c",
		`mount --bind "$0" /etc/hosts && exec "$@"`, r.hosts, binary, "--sandbox-policy-cwd", w.root, "--sandbox-policy", policy}, opts...)
	args = append(args, "--", "/bin/sh", "-c", script)
	cmd := exec.Command("unshare", args...)
	cmd.Dir = w.root
	cmd.Env = append([]string{"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C", "PROBE=" + probe, "REMOTE=" + r.addr}, w.env()...)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Start()
	if err != nil {
		t.Fatal(err)
	}
	started.Store(cmd.Process.Pid, true)
	code := 0
	if err := cmd.Wait(); err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else {
			t.Fatal(err)
		}
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

func allowlist(entries ...string) string {
	var es []string
	for _, e := range entries {
		host, port, _ := strings.Cut(e, ":")
		es = append(es, fmt.Sprintf(`{"domain":%q,"port":%s}`, host, port))
	}
	return `{"type":"read_only","network_access":false,"network_allowlist":[` + strings.Join(es, ",") + `]}`
}

// TestNetworkNone: no network at all, at once; local IPC works.
func TestNetworkNone(t *testing.T) {
	r := newRemote(t)
	w := newWorkspace(t)
	for _, mode := range fsModes {
		out := r.sandbox(t, w, roPolicy, fsOpts(t, mode), `
			curl -s -m 10 http://allowed.test:80/
			echo "curl $?"
			"$PROBE" connect "$REMOTE" 80
			/usr/bin/python3 -c 'import socket
try:
    socket.create_connection(("'$REMOTE'", 80), timeout=5); print("python-reached")
except OSError as e: print("python", e.errno)'
			"$PROBE" socketpair`)
		// Refused at once: curl could not connect (7), not timed out (28).
		if strings.Contains(out.stdout, "reached") || !strings.Contains(out.stdout, "curl 7\n") {
			t.Errorf("%s: %v", mode, out)
		}
		if !strings.Contains(out.stdout, "python 1\n") && !strings.Contains(out.stdout, "python 13\n") {
			t.Errorf("%s: python's connect did not fail with EPERM or EACCES: %q", mode, out.stdout)
		}
		if !strings.HasSuffix(out.stdout, "ok\n") {
			t.Errorf("%s: socketpair failed: %q", mode, out.stdout)
		}
		// The probe's own connect: refused by the filter (no inet socket).
		if !strings.Contains(out.stdout, "EPERM\n") {
			t.Errorf("%s: the probe's connect was not refused with EPERM: %q", mode, out.stdout)
		}
	}
}

// TestNetworkFull: the network as the host has it.
func TestNetworkFull(t *testing.T) {
	r := newRemote(t)
	w := newWorkspace(t)
	full := `{"type":"read_only","network_access":true,"network_allowlist":[]}`
	out := r.sandbox(t, w, full, nil, `curl -s -m 5 http://allowed.test:80/; echo; curl -s -m 5 http://$REMOTE:8443/; echo; "$PROBE" socket packet; "$PROBE" socket inet raw`)
	want := "plain-80\nother-8443\nEPERM\nEPERM\n"
	if out.stdout != want {
		t.Errorf("full network: %v, want stdout %q", out, want)
	}
}

// TestNetworkAllowlist: only what the allowlist names, through the proxy.
func TestNetworkAllowlist(t *testing.T) {
	r := newRemote(t)
	w := newWorkspace(t)
	pol := allowlist("allowed.test:443", "*.wild.test:443")
	// curl -p tunnels plain HTTP through CONNECT, as HTTPS would be.
	out := r.sandbox(t, w, pol, nil, `
		get() { curl -s -m 10 -p -o /dev/null -w "$1 %{http_code} %{http_connect}\n" "http://$1/"; }
		get allowed.test:443
		get denied.test:443
		get allowed.test:8443
		get x.wild.test:443
		get wild.test:443
		get evil-wild.test:443
		get wild.test.evil:443
		get $REMOTE:443
		curl -s -m 10 http://allowed.test:443/ -w " plain %{http_code}\n"
		"$PROBE" connect "$REMOTE" 443
		"$PROBE" udpsend "$REMOTE" 5353
		/usr/bin/python3 -c 'import urllib.request; print("urllib", urllib.request.urlopen("http://allowed.test:443/", timeout=10).read().decode())'
		wget -q -O - http://allowed.test:443/ 2>/dev/null | sed "s/^/wget /"; echo
		curl -s -m 10 -x socks5h://127.0.0.1:3128 http://x.wild.test:443/ | sed "s/^/socks /"; echo`)
	for _, want := range []string{
		"allowed.test:443 200 200", "denied.test:443 000 403", "allowed.test:8443 000 403",
		"x.wild.test:443 200 200", "wild.test:443 200 200", "evil-wild.test:443 000 403", "wild.test.evil:443 000 403",
		r.addr + ":443 000 403", "tls-like-443 plain 200", "urllib tls-like-443", "wget tls-like-443", "socks tls-like-443",
	} {
		if !strings.Contains(out.stdout, want+"\n") {
			t.Errorf("missing %q in:\n%s", want, out.stdout)
		}
	}
	// No route: a direct connect fails, and no datagram leaves.
	if !strings.Contains(out.stdout, "ENETUNREACH") {
		t.Errorf("direct connect did not fail with ENETUNREACH:\n%s", out.stdout)
	}
	time.Sleep(200 * time.Millisecond)
	if b, err := os.ReadFile(r.udpLog); err == nil && len(b) > 0 {
		t.Errorf("a UDP datagram left the sandbox: %q", b)
	}
	if out.code != 0 || out.stderr != "" {
		t.Errorf("exit %d stderr %q", out.code, out.stderr)
	}
}

// TestNetworkAllowlistFirstRequest: the proxy is ready before the program
// starts, every time.
func TestNetworkAllowlistFirstRequest(t *testing.T) {
	r := newRemote(t)
	w := newWorkspace(t)
	pol := allowlist("allowed.test:80")
	for i := 0; i < 50; i++ {
		out := r.sandbox(t, w, pol, nil, `curl -s -m 10 http://allowed.test:80/`)
		if out.stdout != "plain-80" {
			t.Fatalf("run %d: the first request failed: %v", i, out)
		}
	}
}

// TestNetworkAllowlistWithoutNamespace: Landlock-only, no network
// namespace: refused unless degradation is allowed, and then only the
// proxy's port can be connected to.
func TestNetworkAllowlistWithoutNamespace(t *testing.T) {
	r := newRemote(t)
	w := newWorkspace(t)
	if landlockABI(t) < 4 {
		t.Skip("Landlock ABI < 4: refused even degraded (checked by the unit tests)")
	}
	pol := allowlist("allowed.test:443")
	out := r.sandbox(t, w, pol, []string{"--fs-mode", "landlock"}, `true`)
	if out.code != 125 || !strings.Contains(out.stderr, "network namespace") {
		t.Fatalf("not refused: %v", out)
	}
	opts := append(fsOpts(t, "landlock"), "--allow-degraded")
	out = r.sandbox(t, w, pol, opts, `curl -s -m 10 -p http://allowed.test:443/; echo; "$PROBE" connect "$REMOTE" 443`)
	if !strings.HasPrefix(out.stdout, "tls-like-443\n") || !strings.Contains(out.stdout, "EACCES") {
		t.Errorf("degraded allowlist: %v", out)
	}
	if !strings.Contains(out.stderr, "degraded") {
		t.Errorf("the degradation was not reported: %q", out.stderr)
	}
	// UDP: from Landlock ABI 10 on, refused (no UDP rule is granted);
	// before, it leaves (the gap the report names), which shows this check
	// can see a datagram arrive.
	out = r.sandbox(t, w, pol, opts, `"$PROBE" udpsend "$REMOTE" 5353`)
	var got []byte
	if landlockABI(t) >= 10 {
		time.Sleep(200 * time.Millisecond) // what would have arrived
		got, _ = os.ReadFile(r.udpLog)
	} else {
		// The datagram the program sent arrives: waited for, boundedly.
		isoPoll(10*time.Second, func() bool { got, _ = os.ReadFile(r.udpLog); return len(got) > 0 })
	}
	if landlockABI(t) >= 10 {
		if probeResult(result{stdout: out.stdout}) != "EACCES" || len(got) > 0 {
			t.Errorf("Landlock ABI %d: a UDP datagram was not refused with EACCES: %v, the sink got %q", landlockABI(t), out, got)
		}
	} else if probeResult(result{stdout: out.stdout}) != "ok" || len(got) == 0 {
		t.Errorf("Landlock ABI %d (no UDP rules): the datagram should leave, as reported: %v, the sink got %q", landlockABI(t), out, got)
	}
}

// TestDaemonSocketsOutOfReach: a daemon's unix socket outside the writable
// roots cannot be connected to, in any network mode; a socket the program
// makes in its workspace works in exact mode.
func TestDaemonSocketsOutOfReach(t *testing.T) {
	w := newWorkspace(t)
	sock := filepath.Join(w.out, "daemon.sock")
	srv := exec.Command(probe, "unixserve", sock)
	out, _ := srv.StdoutPipe()
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = srv.Process.Kill(); _ = srv.Wait() }()
	if line, _ := bufio.NewReader(out).ReadString('\n'); line != "listening\n" {
		t.Fatalf("daemon: %q", line)
	}
	full := `{"type":"read_only","network_access":true,"network_allowlist":[]}`
	for _, mode := range fsModes {
		for _, pol := range []string{roPolicy, full} {
			r := w.sandbox(t, pol, fsOpts(t, mode), probe, "unixconnect", sock)
			if v := probeResult(r); v == "ok" {
				t.Errorf("%s: connected to a daemon's socket (%s)", mode, pol)
			}
		}
	}
	// The program's own socket in its workspace (exact mode).
	own := filepath.Join(w.root, "src", "own.sock")
	r := w.sandbox(t, wsPolicy(t, w.root), fsOpts(t, "exact"), "/bin/sh", "-c",
		waitFor+`"$0" unixserve "$1" once > "$1.out" & listening "$1.out"; "$0" unixconnect "$1"; wait; cat "$1.out"`, probe, own)
	// Server and client both say "ok" (their lines may interleave).
	if strings.Count(r.stdout, "ok") != 2 || r.code != 0 {
		t.Errorf("the program's own unix socket: %v", r)
	}
}
