package policy

import (
	"reflect"
	"strings"
	"testing"
)

// ws is a minimal valid workspace_write body to build cases from.
const wsRoots = `"writable_roots":[{"root":"/w"}]`

func decodePolicyErr(b []byte) error         { _, err := DecodePolicy(b); return err }
func decodeSeccompProfileErr(b []byte) error { _, err := DecodeSeccompProfile(b); return err }
func decodeResourceLimitsErr(b []byte) error { _, err := DecodeResourceLimits(b); return err }

type rejectCase struct {
	name   string
	decode func([]byte) error
	in     string
	path   string
	msg    string // exact, or a prefix when it ends in "..."
}

func checkReject(t *testing.T, tests []rejectCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.decode([]byte(tt.in))
			if err == nil {
				t.Fatalf("accepted %s", tt.in)
			}
			pe := asError(t, err)
			okMsg := pe.Msg == tt.msg
			if p, ok := strings.CutSuffix(tt.msg, "..."); ok {
				okMsg = strings.HasPrefix(pe.Msg, p)
			}
			if pe.Path != tt.path || !okMsg || pe.Arg != "" {
				t.Fatalf("input %s\n got Arg=%q Path=%q Msg=%q\nwant Path=%q Msg=%q", tt.in, pe.Arg, pe.Path, pe.Msg, tt.path, tt.msg)
			}
		})
	}
}

func TestDecodeRejectsNull(t *testing.T) {
	P, S, L := decodePolicyErr, decodeSeccompProfileErr, decodeResourceLimitsErr
	ww := func(body string) string { return `{"type":"workspace_write",` + wsRoots + `,` + body + `}` }
	checkReject(t, []rejectCase{
		{"top-level policy", P, `null`, "", "expected a JSON object (a sandbox policy), got null"},
		{"top-level profile", S, `null`, "", "expected a JSON object (a seccomp profile), got null"},
		{"top-level limits", L, `null`, "", "expected a JSON object (resource limits), got null"},
		{"type", P, `{"type":null}`, "type", "expected a string naming the policy variant, got null"},
		{"network_access", P, `{"type":"read_only","network_access":null}`, "network_access", "expected a boolean, got null"},
		{"network_allowlist", P, `{"type":"read_only","network_allowlist":null}`, "network_allowlist", "expected an array, got null"},
		{"allowlist element", P, `{"type":"read_only","network_allowlist":[null]}`, "network_allowlist[0]", "expected a JSON object (a network allowlist entry), got null"},
		{"domain", P, `{"type":"read_only","network_allowlist":[{"domain":null}]}`, "network_allowlist[0].domain", "expected a string, got null"},
		{"port", P, `{"type":"read_only","network_allowlist":[{"domain":"a","port":null}]}`, "network_allowlist[0].port", "expected an unsigned 16-bit integer, got null"},
		{"protocol", P, `{"type":"read_only","network_allowlist":[{"domain":"a","protocol":null}]}`, "network_allowlist[0].protocol", "expected a string, got null"},
		{"writable_roots", P, `{"type":"workspace_write","writable_roots":null}`, "writable_roots", "expected an array, got null"},
		{"writable root", P, `{"type":"workspace_write","writable_roots":[{"root":"/a"},null]}`, "writable_roots[1]", "expected a JSON object (a writable root), got null"},
		{"root", P, `{"type":"workspace_write","writable_roots":[{"root":null}]}`, "writable_roots[0].root", "expected a string, got null"},
		{"sensitive path element", P, ww(`"sensitive_paths":[null]`), "sensitive_paths[0]", "expected a JSON object (a sensitive path), got null"},
		{"sensitive path", P, ww(`"sensitive_paths":[{"path":null}]`), "sensitive_paths[0].path", "expected a string, got null"},
		{"block_read", P, ww(`"sensitive_paths":[{"path":"/a","block_read":null}]`), "sensitive_paths[0].block_read", "expected a boolean, got null"},
		{"block_write", P, ww(`"sensitive_paths":[{"path":"/a","block_write":null}]`), "sensitive_paths[0].block_write", "expected a boolean, got null"},
		{"resource_limits", P, ww(`"resource_limits":null`), "resource_limits", "expected a JSON object (resource limits), got null"},
		{"max_memory_mb", P, ww(`"resource_limits":{"max_memory_mb":null}`), "resource_limits.max_memory_mb", "expected an unsigned 64-bit integer, got null"},
		{"max_pids", L, `{"max_pids":null}`, "max_pids", "expected an unsigned 32-bit integer, got null"},
		{"timeout_secs", L, `{"timeout_secs":null}`, "timeout_secs", "expected an unsigned 64-bit integer, got null"},
		{"seccomp_profile", P, ww(`"seccomp_profile":null`), "seccomp_profile", "expected a JSON object (a seccomp profile), got null"},
		{"blocked_syscalls", S, `{"blocked_syscalls":null}`, "blocked_syscalls", "expected an array, got null"},
		{"blocked syscall", S, `{"blocked_syscalls":["ptrace",null]}`, "blocked_syscalls[1]", "expected a string, got null"},
		{"embedded blocked syscall", P, ww(`"seccomp_profile":{"blocked_syscalls":[null]}`), "seccomp_profile.blocked_syscalls[0]", "expected a string, got null"},
		{"log_only", S, `{"log_only":null}`, "log_only", "expected a boolean, got null"},
		{"exclude_slash_tmp", P, ww(`"exclude_slash_tmp":null`), "exclude_slash_tmp", "expected a boolean, got null"},
		{"exclude_tmpdir_env_var", P, ww(`"exclude_tmpdir_env_var":null`), "exclude_tmpdir_env_var", "expected a boolean, got null"},
		{"description", P, `{"type":"external_sandbox","description":null}`, "description", "expected a string, got null"},
	})
}

func TestDecodeNumbers(t *testing.T) {
	L, P := decodeResourceLimitsErr, decodePolicyErr
	port := func(v string) string {
		return `{"type":"read_only","network_allowlist":[{"domain":"a","port":` + v + `}]}`
	}
	checkReject(t, []rejectCase{
		{"float with zero fraction", L, `{"timeout_secs":120.0}`, "timeout_secs", "expected an unsigned 64-bit integer, got a floating-point number 120.0"},
		{"exponent", L, `{"timeout_secs":1e3}`, "timeout_secs", "expected an unsigned 64-bit integer, got a floating-point number 1e3"},
		{"upper-case exponent", L, `{"max_disk_mb":1E3}`, "max_disk_mb", "expected an unsigned 64-bit integer, got a floating-point number 1E3"},
		{"fraction", L, `{"cpu_time_secs":0.5}`, "cpu_time_secs", "expected an unsigned 64-bit integer, got a floating-point number 0.5"},
		{"negative float", L, `{"cpu_time_secs":-1.5}`, "cpu_time_secs", "expected an unsigned 64-bit integer, got a floating-point number -1.5"},
		{"negative", L, `{"max_pids":-1}`, "max_pids", "invalid value: -1, expected an unsigned 32-bit integer"},
		{"negative zero", L, `{"max_pids":-0}`, "max_pids", "invalid value: -0, expected an unsigned 32-bit integer"},
		{"u32 overflow", L, `{"max_pids":4294967296}`, "max_pids", "invalid value: 4294967296, expected an unsigned 32-bit integer"},
		{"u64 overflow", L, `{"timeout_secs":18446744073709551616}`, "timeout_secs", "invalid value: 18446744073709551616, expected an unsigned 64-bit integer"},
		{"u16 overflow", P, port("65536"), "network_allowlist[0].port", "invalid value: 65536, expected an unsigned 16-bit integer"},
		{"port negative", P, port("-1"), "network_allowlist[0].port", "invalid value: -1, expected an unsigned 16-bit integer"},
		{"port float", P, port("443.0"), "network_allowlist[0].port", "expected an unsigned 16-bit integer, got a floating-point number 443.0"},
		{"string for number", L, `{"max_memory_mb":"512"}`, "max_memory_mb", "expected an unsigned 64-bit integer, got a string"},
		{"bool for number", L, `{"max_memory_mb":true}`, "max_memory_mb", "expected an unsigned 64-bit integer, got a boolean"},
		{"long literal is capped", L, `{"max_memory_mb":` + strings.Repeat("9", 500) + `}`, "max_memory_mb", "invalid value: " + strings.Repeat("9", 64) + "..., expected an unsigned 64-bit integer"},
		{"leading zero is not JSON", L, `{"max_memory_mb":01}`, "", "invalid JSON at byte 18: ..."},
		{"plus sign is not JSON", L, `{"max_memory_mb":+1}`, "max_memory_mb", "invalid JSON at byte 17: ..."},
	})

	l, err := DecodeResourceLimits([]byte(`{"max_memory_mb":18446744073709551615,"max_pids":4294967295,"max_disk_mb":0,"cpu_time_secs":1,"timeout_secs":18446744073709551615}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := (ResourceLimits{MaxMemoryMB: 1<<64 - 1, MaxPids: 1<<32 - 1, CPUTimeSecs: 1, TimeoutSecs: 1<<64 - 1}); *l != want {
		t.Fatalf("got %+v", *l)
	}
	p, err := DecodePolicy([]byte(port("65535")))
	if err != nil || p.NetworkAllowlist[0].Port != 65535 {
		t.Fatalf("port 65535: %v %+v", err, p)
	}
	p, err = DecodePolicy([]byte(port("0")))
	if err != nil || p.NetworkAllowlist[0].Port != 0 {
		t.Fatalf("port 0 decodes (Resolve refuses it): %v %+v", err, p)
	}
}

func TestDecodeWrongTypes(t *testing.T) {
	P, S := decodePolicyErr, decodeSeccompProfileErr
	checkReject(t, []rejectCase{
		{"string for bool", P, `{"type":"read_only","network_access":"false"}`, "network_access", "expected a boolean, got a string"},
		{"number for bool", P, `{"type":"read_only","network_access":0}`, "network_access", "expected a boolean, got a number"},
		{"number for string", P, `{"type":"workspace_write","writable_roots":[{"root":1}]}`, "writable_roots[0].root", "expected a string, got a number"},
		{"bool for string", S, `{"blocked_syscalls":[true]}`, "blocked_syscalls[0]", "expected a string, got a boolean"},
		{"object for array", P, `{"type":"workspace_write","writable_roots":{"root":"/a"}}`, "writable_roots", "expected an array, got an object"},
		{"string for array", S, `{"blocked_syscalls":"ptrace"}`, "blocked_syscalls", "expected an array, got a string"},
		{"array for struct (serde's sequence form is refused)", S, `["ptrace"]`, "", "expected a JSON object (a seccomp profile), got an array"},
		{"sequence form of limits", decodeResourceLimitsErr, `[1,2,3,4,5]`, "", "expected a JSON object (resource limits), got an array"},
		{"sequence form of policy", P, `["read_only",false,[]]`, "", "expected a JSON object (a sandbox policy), got an array"},
		{"string document", P, `"read_only"`, "", "expected a JSON object (a sandbox policy), got a string"},
		{"number tag", P, `{"type":1}`, "type", "expected a string naming the policy variant, got a number"},
	})
}

func TestDecodeSyntaxAndFraming(t *testing.T) {
	P := decodePolicyErr
	checkReject(t, []rejectCase{
		{"empty", P, ``, "", "empty input: expected a JSON object"},
		{"only whitespace", P, " \n\t\r", "", "empty input: expected a JSON object"},
		{"BOM", P, "\ufeff{\"type\":\"read_only\"}", "", "invalid JSON at byte 0: a byte order mark (U+FEFF) is not allowed before the value"},
		{"trailing garbage", P, `{"type":"read_only"}x`, "", "trailing characters after the JSON value"},
		{"second value", P, `{"type":"read_only"}{}`, "", "trailing characters after the JSON value"},
		{"trailing number", P, `{"type":"read_only"} 1`, "", "trailing characters after the JSON value"},
		{"trailing NUL", P, "{\"type\":\"read_only\"}\x00", "", "trailing characters after the JSON value"},
		{"trailing comma", P, `{"type":"read_only",}`, "", "invalid JSON at byte 19: ..."},
		{"truncated", P, `{"type":"read_only"`, "", "invalid JSON: unexpected end of input"},
		{"truncated string", P, `{"type":"read_o`, "type", "invalid JSON: unexpected end of input"},
		{"single quotes", P, `{'type':'read_only'}`, "", "invalid JSON at byte 1: ..."},
		{"invalid UTF-8 in a value", P, "{\"type\":\"workspace_write\",\"writable_roots\":[{\"root\":\"/a\xff\"}]}", "writable_roots[0].root", "invalid JSON at byte 55: invalid UTF-8"},
		{"invalid UTF-8 in a name", P, "{\"ty\xc3pe\":1}", "", "invalid JSON at byte 4: invalid UTF-8"},
		{"lone high surrogate", P, `{"type":"workspace_write","writable_roots":[{"root":"\ud800"}]}`, "writable_roots[0].root", "invalid JSON at byte 53: invalid surrogate pair ..."},
		{"lone low surrogate", P, `{"type":"\udc00"}`, "type", "invalid JSON at byte 9: invalid surrogate pair ..."},
		{"raw control character", P, "{\"type\":\"read\nonly\"}", "type", `invalid JSON at byte 13: invalid character '\n' in string (expecting non-control character)`},
		{"too deep", P, `{"type":"read_only","x":` + strings.Repeat("[", 200) + strings.Repeat("]", 200) + `}`,
			"x" + strings.Repeat("[0]", 126), "nesting too deep: more than 127 arrays/objects inside each other"},
	})
	for _, in := range []string{
		" \n{\"type\":\"read_only\"} \n\t\r", // whitespace around the value is fine
		`{"type":"read_only"}`,
	} {
		if _, err := DecodePolicy([]byte(in)); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

func TestDecodeDuplicateKeys(t *testing.T) {
	P, S, L := decodePolicyErr, decodeSeccompProfileErr, decodeResourceLimitsErr
	checkReject(t, []rejectCase{
		{"top-level", P, `{"type":"read_only","network_access":false,"network_access":true}`, "", "duplicate field `network_access`"},
		{"duplicate type", P, `{"type":"read_only","type":"read_only"}`, "", "duplicate field `type`"},
		{"duplicate type, different values", P, `{"type":"workspace_write","type":"read_only"}`, "", "duplicate field `type`"},
		{"escaped duplicate", P, `{"type":"read_only","\u0074ype":"read_only"}`, "", "duplicate field `type`"},
		{"nested", P, `{"type":"workspace_write",` + wsRoots + `,"resource_limits":{"max_pids":1,"max_pids":2}}`, "resource_limits", "duplicate field `max_pids`"},
		{"in array element", P, `{"type":"workspace_write","writable_roots":[{"root":"/a"},{"root":"/b","root":"/c"}]}`, "writable_roots[1]", "duplicate field `root`"},
		{"profile", S, `{"log_only":true,"log_only":false}`, "", "duplicate field `log_only`"},
		{"limits", L, `{"timeout_secs":1,"timeout_secs":1}`, "", "duplicate field `timeout_secs`"},
		{"inside an unknown field", P, `{"type":"read_only","x":{"a":1,"a":2}}`, "x", "duplicate field `a`"},
	})
}

func TestDecodeTag(t *testing.T) {
	P := decodePolicyErr
	expected := ", expected one of `read_only`, `workspace_write`, `danger_full_access`, `external_sandbox`"
	checkReject(t, []rejectCase{
		{"missing", P, `{"network_access":false}`, "", "missing field `type`"},
		{"missing in empty object", P, `{}`, "", "missing field `type`"},
		{"camel case", P, `{"type":"ReadOnly"}`, "type", "unknown variant `ReadOnly`" + expected},
		{"kebab case", P, `{"type":"read-only"}`, "type", "unknown variant `read-only`" + expected},
		{"upper case", P, `{"type":"READ_ONLY"}`, "type", "unknown variant `READ_ONLY`" + expected},
		{"empty", P, `{"type":""}`, "type", "unknown variant ``" + expected},
		{"mis-cased key", P, `{"Type":"read_only"}`, "", "missing field `type`"},
		{"control characters escaped", P, `{"type":"a\nb` + "\u202e" + `"}`, "type", "unknown variant `a\\nb\\u202e`" + expected},
		{"backtick escaped", P, "{\"type\":\"a`b\"}", "type", "unknown variant `a\\`b`" + expected},
	})

	// The tag may come anywhere, after the fields it governs.
	for _, in := range []string{
		`{"network_access":true,"type":"read_only"}`,
		`{"network_allowlist":[],"network_access":true,"type":"read_only"}`,
	} {
		p, err := DecodePolicy([]byte(in))
		if err != nil || p.Kind != KindReadOnly || !p.NetworkAccess {
			t.Errorf("%s: %v %+v", in, err, p)
		}
	}
	p, err := DecodePolicy([]byte(`{"exclude_slash_tmp":true,` + wsRoots + `,"type":"workspace_write"}`))
	if err != nil || p.Kind != KindWorkspaceWrite || !p.ExcludeSlashTmp || p.WritableRoots[0].Root != "/w" {
		t.Errorf("tag last: %v %+v", err, p)
	}
}

func TestDecodeUnknownFields(t *testing.T) {
	P, S, L := decodePolicyErr, decodeSeccompProfileErr, decodeResourceLimitsErr
	why := ": " + unknownFieldWhy
	checkReject(t, []rejectCase{
		{"read_only", P, `{"type":"read_only","foo":1}`, "", "unknown field `foo` for policy type `read_only`" + why},
		{"writable_roots is not a read_only field", P, `{"type":"read_only","writable_roots":[]}`, "", "unknown field `writable_roots` for policy type `read_only`" + why},
		{"sensitive_paths is not a read_only field", P, `{"type":"read_only","sensitive_paths":null}`, "", "unknown field `sensitive_paths` for policy type `read_only`" + why},
		{"case-sensitive keys", P, `{"type":"read_only","NETWORK_ACCESS":true}`, "", "unknown field `NETWORK_ACCESS` for policy type `read_only`" + why},
		{"workspace_write", P, `{"type":"workspace_write",` + wsRoots + `,"description":"x"}`, "", "unknown field `description` for policy type `workspace_write`" + why},
		{"danger_full_access", P, `{"type":"danger_full_access","network_access":true}`, "", "unknown field `network_access` for policy type `danger_full_access`" + why},
		{"external_sandbox", P, `{"type":"external_sandbox","description":"d","x":1}`, "", "unknown field `x` for policy type `external_sandbox`" + why},
		{"writable root", P, `{"type":"workspace_write","writable_roots":[{"root":"/a","readonly":true}]}`, "writable_roots[0]", "unknown field `readonly`" + why},
		{"allowlist entry", P, `{"type":"read_only","network_allowlist":[{"domain":"a","path":"/x"}]}`, "network_allowlist[0]", "unknown field `path`" + why},
		{"sensitive path", P, `{"type":"workspace_write",` + wsRoots + `,"sensitive_paths":[{"path":"/a","block_exec":true}]}`, "sensitive_paths[0]", "unknown field `block_exec`" + why},
		{"embedded limits", P, `{"type":"workspace_write",` + wsRoots + `,"resource_limits":{"max_files":1}}`, "resource_limits", "unknown field `max_files`" + why},
		{"embedded profile", P, `{"type":"workspace_write",` + wsRoots + `,"seccomp_profile":{"allowed_syscalls":[]}}`, "seccomp_profile", "unknown field `allowed_syscalls`" + why},
		{"profile", S, `{"kill":true}`, "", "unknown field `kill`" + why},
		{"limits", L, `{"max_open_files":10}`, "", "unknown field `max_open_files`" + why},
		{"long name is capped", L, `{"` + strings.Repeat("a", 300) + `":1}`, "", "unknown field `" + strings.Repeat("a", 64) + "...`" + why},
		{"newline in name is escaped", L, `{"a\nb":1}`, "", "unknown field `a\\nb`" + why},
	})
}

func TestDecodeMissingRequired(t *testing.T) {
	P := decodePolicyErr
	checkReject(t, []rejectCase{
		{"writable_roots", P, `{"type":"workspace_write"}`, "", "missing field `writable_roots`"},
		{"root", P, `{"type":"workspace_write","writable_roots":[{}]}`, "writable_roots[0]", "missing field `root`"},
		{"domain", P, `{"type":"read_only","network_allowlist":[{"port":80}]}`, "network_allowlist[0]", "missing field `domain`"},
		{"path", P, `{"type":"workspace_write",` + wsRoots + `,"sensitive_paths":[{"block_read":false}]}`, "sensitive_paths[0]", "missing field `path`"},
		{"description", P, `{"type":"external_sandbox"}`, "", "missing field `description`"},
		{"first error in document order wins", P, `{"type":"workspace_write","writable_roots":[{}],"network_access":"x"}`, "writable_roots[0]", "missing field `root`"},
	})
}

func TestDecodeDefaults(t *testing.T) {
	ww := func(body string) *SandboxPolicy {
		t.Helper()
		in := `{"type":"workspace_write",` + wsRoots
		if body != "" {
			in += "," + body
		}
		p, err := DecodePolicy([]byte(in + "}"))
		if err != nil {
			t.Fatalf("%s: %v", body, err)
		}
		return p
	}

	t.Run("read_only", func(t *testing.T) {
		p, err := DecodePolicy([]byte(`{"type":"read_only"}`))
		if err != nil {
			t.Fatal(err)
		}
		want := SandboxPolicy{Kind: KindReadOnly, NetworkAllowlist: []NetworkAllowlistEntry{}}
		if !reflect.DeepEqual(*p, want) {
			t.Fatalf("got %+v", *p)
		}
	})
	t.Run("workspace_write minimal", func(t *testing.T) {
		p := ww("")
		if p.SensitivePaths != nil || p.ExcludeSlashTmp || p.ExcludeTmpdirEnvVar || p.NetworkAccess || len(p.NetworkAllowlist) != 0 {
			t.Fatalf("got %+v", *p)
		}
		if p.ResourceLimits != DefaultResourceLimits() || p.ResourceLimits.TimeoutSecs != 300 {
			t.Fatalf("missing resource_limits: %+v", p.ResourceLimits)
		}
		if !reflect.DeepEqual(p.SeccompProfile, StrictSeccompProfile()) || len(p.SeccompProfile.BlockedSyscalls) != 31 {
			t.Fatalf("missing seccomp_profile: %+v", p.SeccompProfile)
		}
	})
	t.Run("present resource_limits gives zeros", func(t *testing.T) {
		if l := ww(`"resource_limits":{}`).ResourceLimits; l != (ResourceLimits{}) {
			t.Fatalf("{}: %+v", l)
		}
		if l := ww(`"resource_limits":{"max_memory_mb":512}`).ResourceLimits; l != (ResourceLimits{MaxMemoryMB: 512}) {
			t.Fatalf("partial: %+v", l)
		}
		l, err := DecodeResourceLimits([]byte(`{}`))
		if err != nil || *l != (ResourceLimits{}) {
			t.Fatalf("--resource-limits {}: %v %+v", err, l)
		}
	})
	t.Run("seccomp defaults", func(t *testing.T) {
		if s := ww(`"seccomp_profile":{}`).SeccompProfile; !reflect.DeepEqual(s, StrictSeccompProfile()) {
			t.Fatalf("{}: %+v", s)
		}
		s := ww(`"seccomp_profile":{"log_only":true}`).SeccompProfile
		if !s.LogOnly || !reflect.DeepEqual(s.BlockedSyscalls, BlockedSyscalls) {
			t.Fatalf("missing blocked_syscalls: %+v", s)
		}
		s = ww(`"seccomp_profile":{"blocked_syscalls":[]}`).SeccompProfile
		if s.BlockedSyscalls == nil || len(s.BlockedSyscalls) != 0 {
			t.Fatalf("[] must block nothing: %#v", s.BlockedSyscalls)
		}
		p, err := DecodeSeccompProfile([]byte(`{}`))
		if err != nil || !reflect.DeepEqual(*p, StrictSeccompProfile()) {
			t.Fatalf("--seccomp-profile {}: %v %+v", err, p)
		}
		// The default list is a copy: changing it must not change BlockedSyscalls.
		p.BlockedSyscalls[0] = "changed"
		if BlockedSyscalls[0] != "ptrace" {
			t.Fatal("decoder aliases BlockedSyscalls")
		}
	})
	t.Run("sensitive_paths", func(t *testing.T) {
		if p := ww(`"sensitive_paths":null`); p.SensitivePaths != nil {
			t.Fatal("null must be None")
		}
		if p := ww(`"sensitive_paths":[]`); p.SensitivePaths == nil || len(*p.SensitivePaths) != 0 {
			t.Fatal("[] must be Some(empty)")
		}
		p := ww(`"sensitive_paths":[{"path":"~/.a"},{"path":"/b","block_read":false},{"path":"/c","block_write":false}]`)
		want := []SensitivePath{{"~/.a", true, true}, {"/b", false, true}, {"/c", true, false}}
		if !reflect.DeepEqual(*p.SensitivePaths, want) {
			t.Fatalf("got %+v", *p.SensitivePaths)
		}
	})
	t.Run("allowlist entry defaults", func(t *testing.T) {
		p := ww(`"network_allowlist":[{"domain":"a.example"},{"domain":"b","port":80,"protocol":"udp"}]`)
		want := []NetworkAllowlistEntry{{"a.example", 443, "tcp"}, {"b", 80, "udp"}}
		if !reflect.DeepEqual(p.NetworkAllowlist, want) {
			t.Fatalf("got %+v", p.NetworkAllowlist)
		}
	})
	t.Run("NUL inside strings decodes", func(t *testing.T) {
		p := ww(`"sensitive_paths":[{"path":"/a\u0000b"}]`)
		if (*p.SensitivePaths)[0].Path != "/a\x00b" {
			t.Fatalf("got %q", (*p.SensitivePaths)[0].Path)
		}
		p, err := DecodePolicy([]byte(`{"type":"workspace_write","writable_roots":[{"root":"/a\u0000"}]}`))
		if err != nil || p.WritableRoots[0].Root != "/a\x00" {
			t.Fatalf("%v %+v", err, p)
		}
	})
	t.Run("relative root decodes", func(t *testing.T) {
		p, err := DecodePolicy([]byte(`{"type":"workspace_write","writable_roots":[{"root":"rel"}]}`))
		if err != nil || p.WritableRoots[0].Root != "rel" {
			t.Fatalf("%v %+v", err, p)
		}
	})
	t.Run("escapes and non-ASCII", func(t *testing.T) {
		p, err := DecodePolicy([]byte(`{"\u0074ype":"workspace_write","writable_roots":[{"root":"/d\u00e9j\u00e0/\ud83d\ude00/é"}]}`))
		if err != nil || p.WritableRoots[0].Root != "/déjà/😀/é" {
			t.Fatalf("%v %+v", err, p)
		}
	})
}
