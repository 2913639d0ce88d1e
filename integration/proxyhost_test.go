package integration

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// The allowlist proxy dials from the caller's network namespace: it must
// never connect to that host itself, whatever an allowed name resolves to
// (issue 26, item 5). The helper runs here in a network namespace of the
// test's own, whose interfaces stand for the host's: a veth interface with
// addresses of the host's own (10.77.0.1, fd77::1, 169.254.7.1), a service
// on every one of them ([::]:8080), and a veth pair to a second namespace,
// a remote with a private address (10.78.0.2) and one that stands for a
// public one (198.51.100.2). Names get their addresses from a hosts file
// the helper sees as /etc/hosts. The host's own network is never touched.

// proxyHost is that world.
type proxyHost struct {
	ns, remote string // the namespaces: the helper's ("the host") and the remote
	hosts      string // the hosts file
}

func newProxyHost(t *testing.T) *proxyHost {
	t.Helper()
	isoNeedRoot(t)
	isoNeedTools(t, "ip", "unshare", "curl", "setpriv")
	b := make([]byte, 3)
	_, _ = rand.Read(b)
	id := hex.EncodeToString(b)
	h := &proxyHost{ns: "se-ph-" + id, remote: "se-phr-" + id}
	sh := func(cmd string) {
		t.Helper()
		if out, err := exec.Command("/bin/sh", "-c", cmd).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", cmd, err, out)
		}
	}
	for _, ns := range []string{h.ns, h.remote} {
		sh("ip netns add " + ns)
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", ns).Run() })
		sh("ip -n " + ns + " link set lo up")
	}
	// A veth pair of its own stands for the host's interface (no dummy
	// module needed): its addresses are the namespace's own.
	sh("ip -n " + h.ns + " link add d0 type veth peer name d1 && ip -n " + h.ns + " link set d0 up && ip -n " + h.ns + " link set d1 up")
	sh("ip -n " + h.ns + " addr add 10.77.0.1/24 dev d0 && ip -n " + h.ns + " addr add 169.254.7.1/16 dev d0 && ip -n " + h.ns + " addr add fd77::1/64 dev d0 nodad")
	sh("ip -n " + h.ns + " link add v0 type veth peer name v1 netns " + h.remote)
	sh("ip -n " + h.ns + " addr add 10.78.0.1/24 dev v0 && ip -n " + h.ns + " addr add 198.51.100.1/24 dev v0 && ip -n " + h.ns + " link set v0 up")
	sh("ip -n " + h.remote + " addr add 10.78.0.2/24 dev v1 && ip -n " + h.remote + " addr add 198.51.100.2/24 dev v1 && ip -n " + h.remote + " link set v1 up")
	for _, srv := range [][]string{{h.ns, "8080", "HOST-SERVICE", "6"}, {h.remote, "8080", "REMOTE"}} {
		cmd := exec.Command("ip", append([]string{"netns", "exec", srv[0], probe, "httpserve"}, srv[1:]...)...)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		if line, _ := bufio.NewReader(out).ReadString('\n'); line != "listening\n" {
			t.Fatalf("server %v: %q", srv, line)
		}
	}
	h.hosts = filepath.Join(t.TempDir(), "hosts")
	_ = os.Chmod(filepath.Dir(h.hosts), 0o755)
	write(t, h.hosts, `127.0.0.1 localhost
10.77.0.1 own.test
fd77::1 own6.test
::ffff:10.77.0.1 mapped.test
10.77.0.9 late.test
0.0.0.0 zero.test
:: zero6.test
169.254.7.1 ll.test
127.0.0.1 loop.test
10.78.0.2 x.wild.test corp.test
198.51.100.2 pub.wild.test
`)
	// The world is sound: from "the host", its own service and the remote
	// answer.
	for addr, want := range map[string]string{"10.77.0.1": "HOST-SERVICE", "[fd77::1]": "HOST-SERVICE", "10.78.0.2": "REMOTE", "198.51.100.2": "REMOTE"} {
		out, err := exec.Command("ip", "netns", "exec", h.ns, "curl", "-s", "-m", "5", "--noproxy", "*", "http://"+addr+":8080/").Output()
		if err != nil || string(out) != want {
			t.Fatalf("%s:8080 from the test's host namespace: %v %q, want %q", addr, err, out, want)
		}
	}
	return h
}

// via is the launcher chain that runs the helper in h's namespace, with its
// hosts file, as u.
func (h *proxyHost) via(u isoUser) []string {
	via := []string{"ip", "netns", "exec", h.ns, "unshare", "-m", "--propagation", "private", "/bin/sh", "-c",
		`mount --bind "$0" /etc/hosts && exec "$@"`, h.hosts}
	if u.cred != nil {
		via = append(via, "setpriv", fmt.Sprintf("--reuid=%d", u.cred.Uid), fmt.Sprintf("--regid=%d", u.cred.Gid), "--clear-groups")
	}
	return via
}

// TestProxyNeverReachesTheHost: through the allowlist proxy, an allowed
// name reaches neither an address of the host's own interfaces (IPv4,
// IPv6, IPv4-mapped, one added while the run runs), nor loopback, the
// unspecified addresses or link-local; a name matched only by a wildcard
// does not reach a private address, while an exact name does and an entry
// naming the host's address literally reaches it. Each refusal is in the
// denial log with its reason, and --explain says what each entry reaches.
// As root and as an unprivileged user, in exact mode (the program in a
// network namespace of its own) and in Landlock-only mode with the proxy on
// the host's loopback (degraded).
func TestProxyNeverReachesTheHost(t *testing.T) {
	h := newProxyHost(t)
	entries := []string{"own.test:8080", "own6.test:8080", "mapped.test:8080", "late.test:8080", "zero.test:8080", "zero6.test:8080",
		"ll.test:8080", "loop.test:8080", "*.wild.test:8080", "corp.test:8080", "10.77.0.1:8080"}
	var es []string
	for _, e := range entries {
		host, port, _ := strings.Cut(e, ":")
		es = append(es, fmt.Sprintf(`{"domain":%q,"port":%s}`, host, port))
	}
	for _, u := range isoAnyUser(t) {
		for _, mode := range []string{"exact", "landlock"} {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := isoWorkspace(t, u)
				pol := fmt.Sprintf(`{"type":"workspace_write","writable_roots":[{"root":%q}],"network_allowlist":[%s],"seccomp_profile":{"allow_network_sockets":true}}`,
					w.root, strings.Join(es, ","))
				log := filepath.Join(w.out, "denials.jsonl")
				opts := fsOpts(t, mode)
				if mode == "landlock" {
					if landlockABI(t) < 4 {
						t.Skip("Landlock ABI < 4: the allowlist without a network namespace is refused even degraded")
					}
					opts = append(opts, "--allow-degraded")
				}
				args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol}, opts...)
				script := `
					get() { printf '%s ' "$1"; curl -s -m 10 -p "http://$1/" -w " %{http_connect}\n"; }
					for n in own.test own6.test mapped.test zero.test zero6.test ll.test loop.test x.wild.test corp.test pub.wild.test 10.77.0.1; do get $n:8080; done
					: > src/ready; while [ ! -e src/go ]; do sleep 0.05; done
					get late.test:8080
					exit 0`
				// Unprimed in the warm mode: a run with the proxy is Go's
				// throughout, there is nothing for the warm path to carry out.
				done := async(func() result {
					return run(t, runOpts{env: isoEnv(w), dir: w.root, via: h.via(u), timeout: 120 * time.Second, unprimed: true},
						append(append(args, "--log-denials", log, "--"), "/bin/sh", "-c", script)...)
				})
				ready := filepath.Join(w.root, "src", "ready")
				var early *result
				if !isoPoll(60*time.Second, func() bool {
					select {
					case r := <-done:
						early = &r
						return true
					default:
					}
					_, err := os.Stat(ready)
					return err == nil
				}) || early != nil {
					t.Fatalf("the program never got to the late address: %v", early)
				}
				// An address the host gains while the run runs.
				if out, err := exec.Command("ip", "-n", h.ns, "addr", "add", "10.77.0.9/24", "dev", "d0").CombinedOutput(); err != nil {
					t.Fatalf("ip addr add: %v %s", err, out)
				}
				defer exec.Command("ip", "-n", h.ns, "addr", "del", "10.77.0.9/24", "dev", "d0").Run()
				write(t, filepath.Join(w.root, "src", "go"), "")
				r := <-done
				if r.code != 0 {
					t.Fatalf("run: %v", r)
				}
				got := map[string]string{}
				for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
					if name, rest, ok := strings.Cut(l, " "); ok {
						got[strings.TrimSuffix(name, ":8080")] = strings.TrimSpace(rest)
					}
				}
				for name, want := range map[string]string{
					"own.test": "403", "own6.test": "403", "mapped.test": "403", "late.test": "403", "zero.test": "403", "zero6.test": "403",
					"ll.test": "403", "loop.test": "403", "x.wild.test": "403",
					"corp.test": "REMOTE 200", "pub.wild.test": "REMOTE 200", "10.77.0.1": "HOST-SERVICE 200",
				} {
					if got[name] != want {
						t.Errorf("%s:8080 through the proxy: %q, want %q (stdout %q, stderr %q)", name, got[name], want, r.stdout, r.stderr)
					}
				}
				// Each refusal is logged with why.
				reasons := map[string]string{}
				if b, err := os.ReadFile(log); err == nil {
					for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
						var d struct{ Host, Reason string }
						if json.Unmarshal([]byte(l), &d) == nil && d.Host != "" {
							reasons[d.Host] = d.Reason
						}
					}
				}
				for name, why := range map[string]string{
					"own.test": "10.77.0.1, an address of this host", "own6.test": "fd77::1, an address of this host",
					"mapped.test": "10.77.0.1, an address of this host", "late.test": "10.77.0.9, an address of this host",
					"x.wild.test": "a name matched only by a wildcard reaches public addresses only", "ll.test": "link-local",
				} {
					if !strings.Contains(reasons[name], why) {
						t.Errorf("denial log for %s: %q, want it to say %q", name, reasons[name], why)
					}
				}
				// --explain says what each entry reaches.
				er := run(t, runOpts{env: isoEnv(w), dir: w.root, via: h.via(u), unprimed: true}, append(append([]string{"--explain"}, args...), "--", "/bin/true")...)
				var ex struct {
					Enforcement struct {
						Network struct {
							Destinations []struct{ Entry, Reaches string } `json:"destinations"`
						} `json:"network"`
					} `json:"enforcement"`
				}
				if err := json.Unmarshal([]byte(er.stdout), &ex); err != nil {
					t.Fatalf("--explain: %v (%v)", err, er)
				}
				reach := map[string]string{}
				for _, d := range ex.Enforcement.Network.Destinations {
					reach[d.Entry] = d.Reaches
				}
				if !strings.Contains(reach["*.wild.test:8080"], "public addresses only") || !strings.Contains(reach["corp.test:8080"], "never the host's own addresses") ||
					!strings.Contains(reach["10.77.0.1:8080"], "that address only") {
					t.Errorf("--explain's destinations: %q", ex.Enforcement.Network.Destinations)
				}
			})
		}
	}
}
