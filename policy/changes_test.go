package policy

import (
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// deniedSources maps each denied path to its source.
func deniedSources(list []DeniedPath) map[string]string {
	m := map[string]string{}
	for _, d := range list {
		m[d.Path] = d.Source
	}
	return m
}

func TestChangesOnTheDefault(t *testing.T) {
	e := newTestEnv(t)
	out, vendor, ssh := filepath.Join(e.dir, "out"), filepath.Join(e.ws, "vendor"), filepath.Join(e.home, ".ssh")
	mkdirs(t, out, vendor, ssh)
	in := e.input(*DefaultStandalone(e.ws, HostSize{CPUs: 2, MemoryBytes: 4 << 30}))
	in.Standalone = true
	in.Seccomp.AllowNetworkSockets = true // as the CLI widens the strict profile for loopback
	in.Changes = &Changes{
		Writable:     []ChangedPath{{Path: out, From: "--rw"}},
		ReadOnly:     []ChangedPath{{Path: vendor, From: "--ro"}, {Path: "~/.ssh", From: "--ro"}},
		Hidden:       []ChangedPath{{Path: "/etc/hostname", From: "--hide"}},
		Net:          StandaloneNet(),
		LiftDefaults: true,
	}
	p := mustResolve(t, in)
	if len(p.Filesystem.WritableRoots) != 2 || p.Filesystem.WritableRoots[1].Path != out || p.Filesystem.WritableRoots[1].Source != "--rw" {
		t.Errorf("roots: %+v", p.Filesystem.WritableRoots)
	}
	read, write := deniedSources(p.Filesystem.ReadDenied), deniedSources(p.Filesystem.WriteDenied)
	if read["/etc/hostname"] != "--hide" || write["/etc/hostname"] != "--hide" {
		t.Errorf("--hide: read %q write %q", read["/etc/hostname"], write["/etc/hostname"])
	}
	if write[vendor] != "--ro" || read[vendor] != "" {
		t.Errorf("--ro inside a root: read %q write %q", read[vendor], write[vendor])
	}
	if _, denied := read[ssh]; denied {
		t.Errorf("--ro ~/.ssh left it unreadable")
	}
	if write[ssh] == "" {
		t.Errorf("--ro ~/.ssh made it writable")
	}
	if p.Network.Mode != NetworkLoopback || !strings.HasPrefix(p.Network.Why, "the built-in default") {
		t.Errorf("network: %+v", p.Network)
	}
	// --rw lifts both sides of a default secret.
	in.Changes = &Changes{Writable: []ChangedPath{{Path: ssh, From: "--rw"}}, LiftDefaults: true}
	p = mustResolve(t, in)
	if _, denied := deniedSources(p.Filesystem.WriteDenied)[ssh]; denied {
		t.Errorf("--rw ~/.ssh left it write-denied")
	}
	// A path around a secret leaves it denied: a secret is given up only
	// by its name.
	for _, flag := range []string{"--rw", "--ro"} {
		c := &Changes{LiftDefaults: true}
		if flag == "--rw" {
			c.Writable = []ChangedPath{{Path: "~", From: flag}}
		} else {
			c.ReadOnly = []ChangedPath{{Path: "~", From: flag}}
		}
		in.Changes = c
		p = mustResolve(t, in)
		if read := deniedSources(p.Filesystem.ReadDenied); read[ssh] == "" {
			t.Errorf("%s ~ made ~/.ssh readable", flag)
		}
		if write := deniedSources(p.Filesystem.WriteDenied); write[ssh] == "" {
			t.Errorf("%s ~ made ~/.ssh writable", flag)
		}
	}
}

func TestChangesRefused(t *testing.T) {
	e := newTestEnv(t)
	ssh := filepath.Join(e.home, ".ssh")
	mkdirs(t, ssh)
	for _, c := range []struct {
		name    string
		changes Changes
		want    string
	}{
		{"part of a secret", Changes{ReadOnly: []ChangedPath{{Path: ssh + "/known_hosts", From: "--ro"}}, LiftDefaults: true}, "--ro: " + ssh + "/known_hosts: beneath " + ssh},
		{"a given policy's secret", Changes{ReadOnly: []ChangedPath{{Path: "~/.ssh", From: "--ro"}}}, "a change cannot lift a given policy's denial"},
		{"a root read-only", Changes{ReadOnly: []ChangedPath{{Path: e.ws, From: "--ro"}}}, "is a writable root itself"},
		{"a root hidden", Changes{Hidden: []ChangedPath{{Path: e.dir, From: "--hide"}}}, "holds the writable root"},
		{"relative", Changes{Writable: []ChangedPath{{Path: "out", From: "--rw"}}}, "--rw: \"out\": not an absolute path"},
	} {
		in := e.input(*DefaultStandalone(e.ws, HostSize{}))
		in.Changes = &c.changes
		if got := resolveError(t, in); !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

func TestStandaloneLimits(t *testing.T) {
	for _, c := range []struct {
		h    HostSize
		want ResourceLimits
	}{
		{HostSize{}, ResourceLimits{MaxMemoryMB: 512, MaxPids: 4096, MaxDiskMB: 4096, CPUTimeSecs: 300, TimeoutSecs: 600}},
		{HostSize{CPUs: 16, MemoryBytes: 32 << 30}, ResourceLimits{MaxMemoryMB: 16384, MaxPids: 4096, MaxDiskMB: 4096, CPUTimeSecs: 4800, TimeoutSecs: 600}},
		{HostSize{CPUs: 64, MemoryBytes: 256 << 30}, ResourceLimits{MaxMemoryMB: 131072, MaxPids: 16384, MaxDiskMB: 4096, CPUTimeSecs: 19200, TimeoutSecs: 600}},
	} {
		if got := StandaloneLimits(c.h); got != c.want {
			t.Errorf("%+v: %+v, want %+v", c.h, got, c.want)
		}
	}
}

func TestParseHostPort(t *testing.T) {
	for in, want := range map[string]string{"example.com": "example.com:443", "Example.COM:8080": "example.com:8080", "[::1]:80": "::1:80", "*.github.com": "*.github.com:443", "10.0.0.1:22": "10.0.0.1:22"} {
		hp, err := ParseHostPort(in)
		if err != nil || hp.Host+":"+strconv.Itoa(int(hp.Port)) != want {
			t.Errorf("%s: %+v %v, want %s", in, hp, err, want)
		}
	}
	for _, bad := range []string{"", "x.com:0", "x.com:70000", "a..b", "127.1"} {
		if _, err := ParseHostPort(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
