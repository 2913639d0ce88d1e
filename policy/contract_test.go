package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The contract fixtures are copied verbatim from the shared contract into
// testdata/contract (README.txt describes each one).
const contractDir = "testdata/contract"

func readFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(contractDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fixtureNames(t testing.TB, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(contractDir, pattern))
	if err != nil {
		t.Fatal(err)
	}
	if len(m) == 0 {
		t.Fatalf("no fixtures match %s", pattern)
	}
	for i := range m {
		m[i] = filepath.Base(m[i])
	}
	return m
}

// asError returns err as *Error, failing the test otherwise, and checks the
// properties every decoding error has.
func asError(t testing.TB, err error) *Error {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not *policy.Error", err, err)
	}
	if strings.ContainsAny(pe.Msg, "\n\r") || strings.ContainsAny(pe.Path, "\n\r") {
		t.Fatalf("error is not one line: %q", pe.Error())
	}
	return pe
}

// TestContractEveryFixtureKnown makes sure a fixture added to the contract
// is not silently left out of these tests.
func TestContractEveryFixtureKnown(t *testing.T) {
	prefixes := []string{"policy-", "input-", "seccomp-", "limits-", "bad-", "invocation-"}
	for _, name := range fixtureNames(t, "*") {
		if name == "README.txt" {
			continue
		}
		ok := false
		for _, p := range prefixes {
			ok = ok || strings.HasPrefix(name, p)
		}
		if !ok {
			t.Errorf("fixture %s has no test category", name)
		}
	}
}

// TestContractSerdeOutputRoundTrips decodes every fixture serde produced and
// encodes it again: the bytes must be the same, which checks every field,
// its type and the defaults the decoder fills in.
func TestContractSerdeOutputRoundTrips(t *testing.T) {
	for _, name := range fixtureNames(t, "policy-*.json") {
		if name == "policy-danger_full_access.json" || name == "policy-external_sandbox.json" {
			continue
		}
		t.Run(name, func(t *testing.T) {
			data := readFixture(t, name)
			p, err := DecodePolicy(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodePolicy(p); !bytes.Equal(got, data) {
				t.Fatalf("re-encoded differs:\n got %s\nwant %s", got, data)
			}
		})
	}
	for _, name := range fixtureNames(t, "seccomp-*.json") {
		t.Run(name, func(t *testing.T) {
			data := readFixture(t, name)
			s, err := DecodeSeccompProfile(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeSeccomp(*s); !bytes.Equal(got, data) {
				t.Fatalf("re-encoded differs:\n got %s\nwant %s", got, data)
			}
		})
	}
	for _, name := range fixtureNames(t, "limits-*.json") {
		t.Run(name, func(t *testing.T) {
			data := readFixture(t, name)
			l, err := DecodeResourceLimits(data)
			if err != nil {
				t.Fatal(err)
			}
			if got := encodeLimits(*l); !bytes.Equal(got, data) {
				t.Fatalf("re-encoded differs:\n got %s\nwant %s", got, data)
			}
		})
	}
}

// TestContractFixtureValues checks exact decoded values, defaults included.
func TestContractFixtureValues(t *testing.T) {
	strict := StrictSeccompProfile()
	withNet := StrictSeccompProfile()
	withNet.AllowNetworkSockets = true
	permissive := SeccompProfile{BlockedSyscalls: []string{"ptrace", "kexec_load", "kexec_file_load", "reboot"}, AllowNetworkSockets: true}
	mcpLimits := ResourceLimits{MaxMemoryMB: 512, MaxPids: 64, MaxDiskMB: 1024, CPUTimeSecs: 60, TimeoutSecs: 120}
	moderate := ResourceLimits{MaxMemoryMB: 2048, MaxPids: 256, MaxDiskMB: 4096, CPUTimeSecs: 300, TimeoutSecs: 600}
	noAllow := []NetworkAllowlistEntry{}
	full := withNet
	full.BlockedSyscalls = append(full.BlockedSyscalls, "custom_syscall")

	policies := map[string]SandboxPolicy{
		"policy-read_only.json":                   {Kind: KindReadOnly, NetworkAllowlist: noAllow},
		"input-read_only-legacy-minimal.json":     {Kind: KindReadOnly, NetworkAllowlist: noAllow},
		"policy-read_only_with_full_network.json": {Kind: KindReadOnly, NetworkAccess: true, NetworkAllowlist: noAllow},
		"policy-read_only_with_network.json": {Kind: KindReadOnly, NetworkAccess: true,
			NetworkAllowlist: []NetworkAllowlistEntry{{Domain: "api.github.com", Port: 443, Protocol: "tcp"}}},
		"policy-mcp-derived-from-read_only.json": {Kind: KindReadOnly, NetworkAccess: true,
			NetworkAllowlist: []NetworkAllowlistEntry{{Domain: "mcp.internal", Port: 443, Protocol: "tcp"}}},
		"input-workspace_write-minimal.json": {Kind: KindWorkspaceWrite, WritableRoots: []WritableRoot{{Root: "/tmp/ws"}},
			NetworkAllowlist: noAllow, ResourceLimits: DefaultResourceLimits(), SeccompProfile: strict},
		"policy-workspace_write.json": {Kind: KindWorkspaceWrite, WritableRoots: []WritableRoot{{Root: "/tmp/ws"}},
			NetworkAllowlist: noAllow, ResourceLimits: DefaultResourceLimits(), SeccompProfile: strict,
			ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true},
		"policy-workspace_write_with_network.json": {Kind: KindWorkspaceWrite, WritableRoots: []WritableRoot{{Root: "/tmp/ws"}},
			NetworkAccess: true, NetworkAllowlist: []NetworkAllowlistEntry{
				{Domain: "api.github.com", Port: 443, Protocol: "tcp"}, {Domain: "*.npmjs.org", Port: 443, Protocol: "tcp"}},
			ResourceLimits: DefaultResourceLimits(), SeccompProfile: withNet, ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true},
		"policy-workspace_write_full.json": {Kind: KindWorkspaceWrite,
			WritableRoots: []WritableRoot{{Root: "/tmp/ws"}, {Root: "/tmp/extra-write-root"}},
			NetworkAccess: true, NetworkAllowlist: []NetworkAllowlistEntry{{Domain: "registry.npmjs.org", Port: 443, Protocol: "tcp"}},
			SensitivePaths: &[]SensitivePath{{Path: "~/.ssh", BlockRead: true, BlockWrite: true}, {Path: "/tmp/ws/secrets", BlockRead: true, BlockWrite: true}},
			ResourceLimits: moderate, SeccompProfile: full, ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true},
		"policy-read_only-plus-additional-write.json": {Kind: KindWorkspaceWrite, WritableRoots: []WritableRoot{{Root: "/tmp/extra-write-root"}},
			NetworkAllowlist: noAllow, ResourceLimits: mcpLimits, SeccompProfile: strict},
		"policy-handler-workspace_write-full-network.json": {Kind: KindWorkspaceWrite, WritableRoots: []WritableRoot{{Root: "/tmp/ws"}},
			NetworkAllowlist: noAllow, ResourceLimits: DefaultResourceLimits(), SeccompProfile: withNet,
			ExcludeTmpdirEnvVar: true, ExcludeSlashTmp: true},
		"policy-mcp-derived-writable_root.json": {Kind: KindWorkspaceWrite, WritableRoots: []WritableRoot{{Root: "/tmp/mcp-scratch"}},
			NetworkAccess: true, NetworkAllowlist: []NetworkAllowlistEntry{{Domain: "api.example.com", Port: 443, Protocol: "tcp"}},
			ResourceLimits: mcpLimits, SeccompProfile: permissive},
	}
	for name, want := range policies {
		// VT Code serializes every field: the embedded copies are given
		// (the hand-written "input-" fixtures leave them out).
		given := want.Kind == KindWorkspaceWrite && !strings.HasPrefix(name, "input-")
		want.GaveLimits, want.GaveSeccomp = given, given
		t.Run(name, func(t *testing.T) {
			got, err := DecodePolicy(readFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("got  %+v\nwant %+v", *got, want)
			}
		})
	}

	t.Run("runtime-config sensitive paths are VT Code's defaults", func(t *testing.T) {
		got, err := DecodePolicy(readFixture(t, "policy-workspace_write-from-runtime-config.json"))
		if err != nil {
			t.Fatal(err)
		}
		env := environ{"HOME=/home/user", "XDG_RUNTIME_DIR=/run/user/1000"}
		defaults, err := defaultSensitivePaths(env, nil)
		if err != nil {
			t.Fatal(err)
		}
		var paths []string
		for _, sp := range *got.SensitivePaths {
			if !sp.BlockRead || !sp.BlockWrite {
				t.Errorf("%s does not block both", sp.Path)
			}
			paths = append(paths, sp.Path)
		}
		if !reflect.DeepEqual(paths, defaults) {
			t.Fatalf("fixture list\n %q\ndiffers from defaultSensitivePaths\n %q", paths, defaults)
		}
		if got.ResourceLimits != moderate {
			t.Errorf("limits %+v", got.ResourceLimits)
		}
	})

	limits := map[string]ResourceLimits{
		"limits-conservative.json":     ConservativeResourceLimits(),
		"limits-default.json":          DefaultResourceLimits(),
		"limits-unlimited.json":        {},
		"limits-moderate.json":         moderate,
		"limits-generous.json":         {MaxMemoryMB: 8192, MaxPids: 1024, MaxDiskMB: 16384, TimeoutSecs: 3600},
		"limits-mcp-conservative.json": mcpLimits,
	}
	for name, want := range limits {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeResourceLimits(readFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if *got != want {
				t.Fatalf("got %+v, want %+v", *got, want)
			}
		})
	}

	logging := StrictSeccompProfile()
	logging.LogOnly = true
	profiles := map[string]SeccompProfile{
		"seccomp-strict.json":              strict,
		"seccomp-strict-with-network.json": withNet,
		"seccomp-permissive.json":          permissive,
		"seccomp-logging.json":             logging,
	}
	for name, want := range profiles {
		t.Run(name, func(t *testing.T) {
			got, err := DecodeSeccompProfile(readFixture(t, name))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(*got, want) {
				t.Fatalf("got %+v, want %+v", *got, want)
			}
		})
	}
}

// TestContractBadFixtures checks that each malformed input is rejected where
// serde rejects it, with a message that says what is wrong.
func TestContractBadFixtures(t *testing.T) {
	policy := func(b []byte) error { _, err := DecodePolicy(b); return err }
	limits := func(b []byte) error { _, err := DecodeResourceLimits(b); return err }
	tests := []struct {
		name   string
		decode func([]byte) error
		path   string
		msg    string
	}{
		{"bad-duplicate-keys.json", policy, "", "duplicate field `network_access`"},
		{"bad-empty.json", policy, "", "empty input: expected a JSON object"},
		{"bad-missing-type.json", policy, "", "missing field `type`"},
		{"bad-missing-writable_roots.json", policy, "", "missing field `writable_roots`"},
		{"bad-negative-limits.json", limits, "max_memory_mb", "invalid value: -1, expected an unsigned 64-bit integer"},
		{"bad-not-json.json", policy, "", "invalid JSON at byte 0: invalid character 'R' at start of value"},
		{"bad-u64-overflow-limits.json", limits, "max_memory_mb", "invalid value: 18446744073709551616, expected an unsigned 64-bit integer"},
		{"bad-unknown-type.json", policy, "type", "unknown variant `workspace_read`, expected one of `read_only`, `workspace_write`, `danger_full_access`, `external_sandbox`"},
		{"bad-wrong-types.json", policy, "writable_roots[0]", "expected a JSON object (a writable root), got a string"},
	}
	covered := map[string]bool{"bad-enormous-array.json": true}
	for _, tt := range tests {
		covered[tt.name] = true
		t.Run(tt.name, func(t *testing.T) {
			pe := asError(t, tt.decode(readFixture(t, tt.name)))
			if pe.Path != tt.path || pe.Msg != tt.msg || pe.Arg != "" {
				t.Fatalf("got Arg=%q Path=%q Msg=%q\nwant Path=%q Msg=%q", pe.Arg, pe.Path, pe.Msg, tt.path, tt.msg)
			}
		})
	}
	for _, name := range fixtureNames(t, "bad-*.json") {
		if !covered[name] {
			t.Errorf("bad fixture %s is not tested", name)
		}
	}
}

// TestContractEnormousArray: serde accepts 5000 writable roots, and so do we
// (a caller cannot pass it in one argv element, but a file could hold it).
func TestContractEnormousArray(t *testing.T) {
	p, err := DecodePolicy(readFixture(t, "bad-enormous-array.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.WritableRoots) != 5000 || p.WritableRoots[4999].Root != "/tmp/ws/generated/dir04999" {
		t.Fatalf("got %d roots, last %+v", len(p.WritableRoots), p.WritableRoots[len(p.WritableRoots)-1])
	}
}

// TestContractUnconfinedVariantsRefused: serde decodes these two, the helper
// refuses them and says why.
func TestContractUnconfinedVariantsRefused(t *testing.T) {
	for name, variant := range map[string]string{
		"policy-danger_full_access.json": "`danger_full_access`",
		"policy-external_sandbox.json":   "`external_sandbox`",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := DecodePolicy(readFixture(t, name))
			pe := asError(t, err)
			if pe.Path != "type" || !strings.HasPrefix(pe.Msg, variant+" is refused") ||
				!strings.Contains(pe.Msg, "never sends this policy to a sandbox helper") || !strings.Contains(pe.Msg, "unconfined") {
				t.Fatalf("got %q", pe.Error())
			}
		})
	}
}

// TestContractInvocations decodes the JSON arguments of each argv example.
func TestContractInvocations(t *testing.T) {
	for _, name := range fixtureNames(t, "invocation-*.json") {
		t.Run(name, func(t *testing.T) {
			var argv []string
			if err := json.Unmarshal(readFixture(t, name), &argv); err != nil {
				t.Fatal(err)
			}
			decoded := 0
			for i := 1; i+1 < len(argv) && argv[i] != "--"; i++ {
				var err error
				switch argv[i] {
				case "--sandbox-policy":
					_, err = DecodePolicy([]byte(argv[i+1]))
				case "--seccomp-profile":
					_, err = DecodeSeccompProfile([]byte(argv[i+1]))
				case "--resource-limits":
					_, err = DecodeResourceLimits([]byte(argv[i+1]))
				default:
					continue
				}
				if err != nil {
					t.Fatalf("%s: %v", argv[i], WithArg(err, argv[i]))
				}
				decoded++
				i++
			}
			want := 3
			if strings.Contains(name, "legacy") {
				want = 1 // the legacy wrapper sent the policy only
			}
			if decoded != want {
				t.Fatalf("decoded %d JSON arguments, want %d", decoded, want)
			}
		})
	}
}
