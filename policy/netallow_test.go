package policy

import (
	"reflect"
	"strings"
	"testing"
)

func TestResolveNetworkMode(t *testing.T) {
	e := newTestEnv(t)
	entry := []NetworkAllowlistEntry{{Domain: "api.github.com", Port: 443, Protocol: "tcp"}}
	for _, tt := range []struct {
		name      string
		access    bool
		allowlist []NetworkAllowlistEntry
		sockets   bool
		mode      NetworkMode
		why       string
		note      bool
	}{
		{"nothing", false, nil, true, NetworkNone, "network_access is false and network_allowlist is empty", false},
		{"full", true, nil, true, NetworkFull, "network_access is true and network_allowlist is empty", false},
		{"allowlist with access true", true, entry, true, NetworkAllowlist, "network_allowlist has 1 entry, so it governs (network_access, true, is ignored)", false},
		{"allowlist with access false", false, entry, true, NetworkAllowlist, "network_allowlist has 1 entry, so it governs (network_access, false, is ignored)", false},
		{"full narrowed by seccomp", true, nil, false, NetworkNone, "network_access is true and network_allowlist is empty; narrowed to none because allow_network_sockets is false", true},
		{"allowlist narrowed by seccomp", false, entry, false, NetworkNone, "network_allowlist has 1 entry, so it governs (network_access, false, is ignored); narrowed to none because allow_network_sockets is false", true},
		{"none stays none without sockets", false, nil, false, NetworkNone, "network_access is false and network_allowlist is empty", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pol := wsPolicy(e.ws)
			pol.NetworkAccess, pol.NetworkAllowlist = tt.access, tt.allowlist
			in := e.input(pol)
			in.Seccomp.AllowNetworkSockets = tt.sockets
			plan := mustResolve(t, in)
			if plan.Network.Mode != tt.mode || plan.Network.Why != tt.why {
				t.Fatalf("got %+v", plan.Network)
			}
			if (tt.mode == NetworkAllowlist) != (len(plan.Network.Allowlist) > 0) {
				t.Fatalf("allowlist %+v in mode %s", plan.Network.Allowlist, tt.mode)
			}
			if tt.note != (len(plan.Notes) == 1) {
				t.Fatalf("notes %q", plan.Notes)
			}
			if tt.note && plan.Notes[0] != "The policy allows "+map[bool]string{true: "full", false: "allowlist"}[tt.access && tt.allowlist == nil]+
				" network access but the seccomp profile (--seccomp-profile) has allow_network_sockets false, so the stricter wins and network access is none." {
				t.Fatalf("note %q", plan.Notes[0])
			}
		})
	}

	t.Run("handler fixture: access false, sockets true", func(t *testing.T) {
		pol, err := DecodePolicy(readFixture(t, "policy-handler-workspace_write-full-network.json"))
		if err != nil {
			t.Fatal(err)
		}
		pol.WritableRoots = []WritableRoot{{Root: e.ws}}
		if plan := mustResolve(t, e.input(*pol)); plan.Network.Mode != NetworkNone {
			t.Fatalf("got %+v", plan.Network)
		}
	})
	t.Run("read_only derives sockets from its network fields", func(t *testing.T) {
		plan := mustResolve(t, e.input(SandboxPolicy{Kind: KindReadOnly, NetworkAllowlist: entry}))
		if plan.Network.Mode != NetworkAllowlist || len(plan.Notes) != 0 {
			t.Fatalf("got %+v %q", plan.Network, plan.Notes)
		}
	})
}

func TestResolveAllowlistEntries(t *testing.T) {
	e := newTestEnv(t)
	resolve := func(entries ...NetworkAllowlistEntry) (*Plan, error) {
		pol := SandboxPolicy{Kind: KindReadOnly, NetworkAllowlist: entries}
		return Resolve(e.input(pol))
	}
	tcp := func(domain string, port uint16) NetworkAllowlistEntry {
		return NetworkAllowlistEntry{Domain: domain, Port: port, Protocol: "tcp"}
	}

	plan, err := resolve(
		tcp(" API.GitHub.com. ", 443),
		tcp("api.github.com", 443), // duplicate after normalization
		tcp("api.github.com", 8443),
		tcp("*.NPMJS.org", 443),
		tcp("10.0.0.1", 5432),
		tcp("[2001:DB8::1]", 443),
		tcp("2001:db8:0:0::2", 443),
		NetworkAllowlistEntry{Domain: "x-y.example", Port: 1, Protocol: "TCP"},
	)
	if err != nil {
		t.Fatal(err)
	}
	want := []HostPort{
		{"api.github.com", 443, "tcp"}, {"api.github.com", 8443, "tcp"}, {"*.npmjs.org", 443, "tcp"},
		{"10.0.0.1", 5432, "tcp"}, {"2001:db8::1", 443, "tcp"}, {"2001:db8::2", 443, "tcp"}, {"x-y.example", 1, "tcp"},
	}
	if !reflect.DeepEqual(plan.Network.Allowlist, want) {
		t.Fatalf("got  %+v\nwant %+v", plan.Network.Allowlist, want)
	}

	for _, tt := range []struct {
		entry NetworkAllowlistEntry
		want  string
	}{
		{tcp("", 443), `network_allowlist[0].domain: "": empty domain`},
		{tcp("  ", 443), `network_allowlist[0].domain: "  ": empty domain`},
		{tcp("a.example", 0), "network_allowlist[0].port: port 0 cannot be connected to; give the port the host is reached on (443 for https)"},
		{NetworkAllowlistEntry{Domain: "a.example", Port: 53, Protocol: "udp"}, `network_allowlist[0].protocol: "udp": only "tcp" can be enforced (allowed hosts are reached through a proxy, which carries TCP only)`},
		{NetworkAllowlistEntry{Domain: "a.example", Port: 53, Protocol: ""}, `network_allowlist[0].protocol: "": only "tcp" can be enforced`},
		{tcp("*", 443), `network_allowlist[0].domain: "*": "*" is only allowed as the whole first label ("*.example.com")`},
		{tcp("*.", 443), `network_allowlist[0].domain: "*.": "*" is only allowed as the whole first label`},
		{tcp("*..", 443), `network_allowlist[0].domain: "*..": a wildcard needs a hostname after "*."`},
		{tcp("a.*.example", 443), `network_allowlist[0].domain: "a.*.example": "*" is only allowed as the whole first label`},
		{tcp("*a.example", 443), `network_allowlist[0].domain: "*a.example": "*" is only allowed as the whole first label`},
		{tcp("*.*.example", 443), `network_allowlist[0].domain: "*.*.example": "*" is only allowed`},
		{tcp("a..example", 443), `network_allowlist[0].domain: "a..example": not a hostname: every label must have 1 to 63 characters`},
		{tcp("-a.example", 443), `network_allowlist[0].domain: "-a.example": not a hostname: a label cannot start or end with a hyphen`},
		{tcp("a_b.example", 443), `network_allowlist[0].domain: "a_b.example": not a hostname: only letters, digits, hyphens and dots are allowed`},
		{tcp("https://a.example", 443), `network_allowlist[0].domain: "https://a.example": not a hostname`},
		{tcp("a.example:443", 443), `network_allowlist[0].domain: "a.example:443": not a hostname`},
		{tcp("bücher.example", 443), `network_allowlist[0].domain: "bücher.example": not a hostname`},
		{tcp(strings.Repeat("a", 64)+".example", 443), "not a hostname: every label must have 1 to 63 characters"},
		{tcp(strings.Repeat("a.", 127)+"ab", 443), "hostname longer than 253 characters"},
		{tcp("127.1", 443), `network_allowlist[0].domain: "127.1": looks like an IP address in a non-standard form; write the address itself`},
		{tcp("0x7f.0.0.1", 443), "looks like an IP address in a non-standard form"},
		{tcp("010.0.0.1", 443), "looks like an IP address in a non-standard form"},
		{tcp("fe80::1%eth0", 443), "an IPv6 zone cannot be allowed"},
		{tcp("[10.0.0.1]", 443), "not a valid IPv6 address in brackets"},
		{tcp("a\x00.example", 443), `"a\x00.example": not a hostname`},
	} {
		_, err := resolve(tcp("ok.example", 443), tt.entry)
		if err == nil {
			t.Errorf("%+v accepted", tt.entry)
			continue
		}
		want := strings.Replace(tt.want, "network_allowlist[0]", "network_allowlist[1]", 1)
		if got := err.Error(); !strings.HasPrefix(got, "--sandbox-policy: ") || !strings.Contains(got, want) {
			t.Errorf("%+v:\n got %s\nwant ...%s", tt.entry, got, want)
		}
	}
}
