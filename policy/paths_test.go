package policy

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

func TestVTCodeDirs(t *testing.T) {
	noPasswd := func() (string, error) { return "", errors.New("no passwd") }
	const h = "/home/u"
	native := []string{h + "/.config/vtcode", h + "/.config/vtcode/auth", h + "/.local/share/vtcode",
		h + "/.local/state/vtcode", h + "/.cache/vtcode", h + "/.local/state/vtcode/runtime", h + "/.local/bin", h + "/.vtcode"}
	with := func(i int, v string, rest ...any) []string {
		out := append([]string(nil), native...)
		out[i] = v
		for j := 0; j < len(rest); j += 2 {
			out[rest[j].(int)] = rest[j+1].(string)
		}
		return out
	}
	for _, tt := range []struct {
		name string
		env  []string
		want []string
	}{
		{"defaults", nil, native},
		{"XDG_CONFIG_HOME", []string{"XDG_CONFIG_HOME=/xc"}, with(0, "/xc/vtcode", 1, "/xc/vtcode/auth")},
		{"relative XDG_CONFIG_HOME is ignored", []string{"XDG_CONFIG_HOME=xc"}, native},
		{"XDG_CONFIG_HOME with trailing slash", []string{"XDG_CONFIG_HOME=/xc/"}, with(0, "/xc/vtcode", 1, "/xc/vtcode/auth")},
		{"XDG_CONFIG_HOME trimmed", []string{"XDG_CONFIG_HOME= /xc \t"}, with(0, "/xc/vtcode", 1, "/xc/vtcode/auth")},
		{"blank XDG_CONFIG_HOME is unset", []string{"XDG_CONFIG_HOME=  "}, native},
		{"VTCODE_CONFIG beats XDG", []string{"XDG_CONFIG_HOME=/xc", "VTCODE_CONFIG=/vc"}, with(0, "/vc", 1, "/vc/auth")},
		{"XDG_DATA_HOME", []string{"XDG_DATA_HOME=/xd"}, with(2, "/xd/vtcode")},
		{"VTCODE_DATA", []string{"XDG_DATA_HOME=/xd", "VTCODE_DATA=/vd"}, with(2, "/vd")},
		{"XDG_STATE_HOME moves state and runtime", []string{"XDG_STATE_HOME=/xs"}, with(3, "/xs/vtcode", 5, "/xs/vtcode/runtime")},
		{"XDG_CACHE_HOME", []string{"XDG_CACHE_HOME=/xk"}, with(4, "/xk/vtcode")},
		{"XDG_RUNTIME_DIR", []string{"XDG_RUNTIME_DIR=/run/user/1000"}, with(5, "/run/user/1000/vtcode")},
		{"relative XDG_RUNTIME_DIR", []string{"XDG_RUNTIME_DIR=run"}, native},
		{"XDG_BIN_HOME as is", []string{"XDG_BIN_HOME=/xb"}, with(6, "/xb")},
		{"relative XDG_BIN_HOME", []string{"XDG_BIN_HOME=xb"}, native},
		{"VTCODE_HOME", []string{"VTCODE_HOME=/vh"}, with(7, "/vh")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			env := environ(append([]string{"HOME=" + h}, tt.env...))
			got, err := vtcodeDirs(env, noPasswd)
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %q, %v\nwant %q", got, err, tt.want)
			}
		})
	}

	for _, tt := range []struct {
		env    []string
		passwd func() (string, error)
		want   string
	}{
		{[]string{"HOME=/h", "VTCODE_CONFIG=cfg"}, noPasswd, `VTCODE_CONFIG must be an absolute path, got "cfg"`},
		{[]string{"HOME=/h", "VTCODE_DATA=./d"}, noPasswd, `VTCODE_DATA must be an absolute path, got "./d"`},
		{[]string{"HOME=/h", "VTCODE_HOME=~/.vt"}, noPasswd, `VTCODE_HOME must be an absolute path, got "~/.vt"`},
		{[]string{"HOME=h"}, noPasswd, "$HOME is unset, empty or relative and the password database gave no home: no passwd"},
	} {
		if _, err := vtcodeDirs(environ(tt.env), tt.passwd); err == nil || err.Error() != tt.want {
			t.Errorf("%q: got %v, want %s", tt.env, err, tt.want)
		}
	}
	if got, err := vtcodeDirs(environ{"HOME=rel"}, func() (string, error) { return "/pw", nil }); err != nil || got[7] != "/pw/.vtcode" {
		t.Errorf("passwd home: %q %v", got, err)
	}
}

func TestDefaultSensitivePaths(t *testing.T) {
	got, err := defaultSensitivePaths(environ{"HOME=/home/u"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 25 || got[0] != "~/.ssh" || got[16] != "~/.netrc" || got[17] != "/home/u/.config/vtcode" || got[24] != "/home/u/.vtcode" {
		t.Fatalf("got %q", got)
	}
	// A directory equal to an earlier one is added once.
	got, err = defaultSensitivePaths(environ{"HOME=/home/u", "XDG_BIN_HOME=/home/u/.config/vtcode"}, nil)
	if err != nil || len(got) != 24 || containsTwice(got, "/home/u/.config/vtcode") {
		t.Fatalf("dedupe: %q %v", got, err)
	}
}

func containsTwice(list []string, s string) bool {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n > 1
}

// TestResolveDefaultsFailClosed: where VT Code would deny reading "/", the
// helper refuses with an error that says so.
func TestResolveDefaultsFailClosed(t *testing.T) {
	e := newTestEnv(t)
	for _, pol := range []SandboxPolicy{{Kind: KindReadOnly}, func() SandboxPolicy { p := wsPolicy(e.ws); p.SensitivePaths = nil; return p }()} {
		in := e.input(pol)
		in.Environ = append(in.Environ, "VTCODE_CONFIG=relative/config")
		got := resolveError(t, in)
		want := `--sandbox-policy: cannot compute VT Code's default sensitive paths: VTCODE_CONFIG must be an absolute path, got "relative/config"; ` +
			"VT Code would then deny reading / (the whole filesystem), under which no program can run, so refusing"
		if got != want {
			t.Errorf("%s:\n got %s\nwant %s", pol.Kind, got, want)
		}
	}
	// An explicit list does not need VT Code's directories.
	in := e.input(wsPolicy(e.ws))
	in.Environ = append(in.Environ, "VTCODE_CONFIG=relative/config")
	mustResolve(t, in)

	// No home at all fails the same way.
	in = e.input(SandboxPolicy{Kind: KindReadOnly})
	in.Environ = nil
	if got := resolveError(t, in); !strings.Contains(got, "no home: no password database in tests; VT Code would then deny reading /") {
		t.Errorf("got %s", got)
	}
}

func TestExpandTilde(t *testing.T) {
	home := func() (string, error) { return "/h", nil }
	for in, want := range map[string]string{
		"~": "/h", "~/": "/h", "~/.ssh": "/h/.ssh", "~/a/b": "/h/a/b", "~user": "~user", "/x/~": "/x/~", "a": "a", "": "",
		"~//etc/x": "/etc/x", // Path::join: an absolute part replaces the home
	} {
		if got, err := expandTilde(in, home); err != nil || got != want {
			t.Errorf("expandTilde(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
