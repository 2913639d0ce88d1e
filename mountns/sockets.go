package mountns

import (
	"bufio"
	"os"
	"strings"
)

// UnixSockets lists the pathname unix sockets bound in this network
// namespace (/proc/net/unix): daemons' doors (the D-Bus session bus can
// start unsandboxed processes, docker.sock is root, ssh and gpg agents hand
// out keys). Build masks those outside the writable roots, so the program
// cannot connect to them; abstract sockets are left to Landlock's scoping and
// the program's own network namespace.
func UnixSockets() []string {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return []string{}
	}
	defer f.Close()
	seen := map[string]bool{}
	out := []string{}
	sc := bufio.NewScanner(f)
	sc.Scan() // header
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 {
			continue
		}
		p := fields[7]
		if !strings.HasPrefix(p, "/") || seen[p] {
			continue
		}
		seen[p] = true
		out = append(out, p)
	}
	return out
}
