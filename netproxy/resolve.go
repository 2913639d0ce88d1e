package netproxy

import (
	"bufio"
	"context"
	"net"
	"net/netip"
	"os"
	"strings"
)

// hostsFile is where resolveExact looks first.
var hostsFile = "/etc/hosts"

// resolveExact is the default resolver: the name exactly as the allowlist
// matched it, never a neighbour. The hosts file is read first (as
// nsswitch's "files dns" does); DNS is then asked for the name rooted
// ("example.com."), so that the resolver's search list is never applied:
// otherwise an allowed name that does not exist, or a single-label one,
// would be tried with the host's search domains appended
// ("example.com.corp.internal") and the proxy would connect to a host the
// allowlist does not name.
func resolveExact(ctx context.Context, name string) ([]netip.Addr, error) {
	if addrs := lookupHosts(hostsFile, name); len(addrs) > 0 {
		return addrs, nil
	}
	return net.DefaultResolver.LookupNetIP(ctx, "ip", strings.TrimSuffix(name, ".")+".")
}

// lookupHosts returns the addresses a hosts file gives name (compared
// without case), or nil.
func lookupHosts(path, name string) []netip.Addr {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	name = strings.TrimSuffix(name, ".")
	var out []netip.Addr
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		if len(fields) < 2 {
			continue
		}
		addr, err := netip.ParseAddr(fields[0])
		if err != nil {
			continue
		}
		for _, h := range fields[1:] {
			if strings.EqualFold(strings.TrimSuffix(h, "."), name) {
				out = append(out, addr)
				break
			}
		}
	}
	return out
}
