package netproxy

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

func TestLookupHosts(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	content := "# comment\n127.0.0.1 localhost\n10.1.2.3 Build.Corp build # the CI box\n::1 localhost ip6-localhost\nnot-an-ip name\n10.9.9.9\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"localhost":   {"127.0.0.1", "::1"},
		"build.corp":  {"10.1.2.3"},
		"BUILD":       {"10.1.2.3"},
		"build.corp.": {"10.1.2.3"},
		"name":        nil,
		"build.cor":   nil,
		"corp":        nil,
	} {
		var got []string
		for _, a := range lookupHosts(path, name) {
			got = append(got, a.String())
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}

// TestResolveExactReadsHostsFirst: a name in the hosts file is answered
// from it, without DNS (whose rooted query would not see the file).
func TestResolveExactReadsHostsFirst(t *testing.T) {
	path := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(path, []byte("192.0.2.7 only-in-this-file.invalid\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := hostsFile
	hostsFile = path
	defer func() { hostsFile = old }()
	addrs, err := resolveExact(context.Background(), "only-in-this-file.invalid")
	if err != nil || len(addrs) != 1 || addrs[0] != netip.MustParseAddr("192.0.2.7") {
		t.Errorf("%v %v", addrs, err)
	}
}
