package standalone

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sandbox-executable/policy"
)

func TestValues(t *testing.T) {
	for in, want := range map[string]uint64{"90": 90, "90s": 90, "10m": 600, "1h30m": 5400, "1.5s": 2} {
		if got, err := parseDuration(in); err != nil || got != want {
			t.Errorf("duration %q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "0s", "500ms", "-1s", "soon"} {
		if _, err := parseDuration(bad); err == nil {
			t.Errorf("duration %q accepted", bad)
		}
	}
	for in, want := range map[string]uint64{"512": 512, "512M": 512, "4G": 4096, "4GiB": 4096, "1.5g": 1536, "100k": 1, "1T": 1 << 20, "unlimited": 0} {
		if got, err := parseMegabytes(in); err != nil || got != want {
			t.Errorf("size %q: %d %v, want %d", in, got, err, want)
		}
	}
	for _, bad := range []string{"0", "-1G", "lots", "4X"} {
		if _, err := parseMegabytes(bad); err == nil {
			t.Errorf("size %q accepted", bad)
		}
	}
	if n, err := parseCount("8192"); err != nil || n != 8192 {
		t.Errorf("count: %d %v", n, err)
	}
	if _, err := parseCount("0"); err == nil {
		t.Error("a count of 0 accepted")
	}
	mode, hosts, err := parseNet("allow:proxy.golang.org,sum.golang.org:8443")
	if err != nil || mode != policy.NetworkAllowlist || len(hosts) != 2 || hosts[1].Port != 8443 || hosts[0].Port != 443 {
		t.Errorf("allow: %s %+v %v", mode, hosts, err)
	}
	for _, bad := range []string{"some", "allow:", "allow:a..b"} {
		if _, _, err := parseNet(bad); err == nil {
			t.Errorf("net %q accepted", bad)
		}
	}
}

func TestDecide(t *testing.T) {
	s := Settings{
		RW:     []Value{{Text: "out", From: "--rw", Dir: "/w"}, {Text: "~/x", From: "--rw", Dir: "/w"}},
		Net:    []Value{{Text: "allow:a.com", From: "--net"}, {Text: "allow:b.com:80", From: "--net"}},
		Memory: &Value{Text: "2G", From: "--memory"},
	}
	d, err := s.Decide()
	if err != nil {
		t.Fatal(err)
	}
	if d.Changes.Writable[0].Path != "/w/out" || d.Changes.Writable[1].Path != "~/x" {
		t.Errorf("paths: %+v", d.Changes.Writable)
	}
	if d.Changes.Net.Mode != policy.NetworkAllowlist || len(d.Changes.Net.Allow) != 2 {
		t.Errorf("net: %+v", d.Changes.Net)
	}
	if d.Memory.Value != 2048 || d.Memory.From != "--memory" {
		t.Errorf("memory: %+v", d.Memory)
	}
	s.Net = append(s.Net, Value{Text: "none", From: "--net"})
	if _, err := s.Decide(); err == nil || !strings.Contains(err.Error(), `"allow:a.com" and "none"`) {
		t.Errorf("two modes: %v", err)
	}
}

func TestMerge(t *testing.T) {
	file := Settings{RW: []Value{{Text: "a"}}, Memory: &Value{Text: "1G"}, Net: []Value{{Text: "none"}}}
	flags := Settings{RW: []Value{{Text: "b"}}, Memory: &Value{Text: "2G"}}
	m := file.Merge(flags)
	if len(m.RW) != 2 || m.Memory.Text != "2G" || len(m.Net) != 1 {
		t.Errorf("merged: %+v", m)
	}
}

func TestFind(t *testing.T) {
	d := t.TempDir()
	home, proj := filepath.Join(d, "home"), filepath.Join(d, "code", "proj", "sub")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(home, ".config", "sandbox-executable"), 0o700); err != nil {
		t.Fatal(err)
	}
	write := func(p, s string, mode os.FileMode) {
		if err := os.WriteFile(p, []byte(s), mode); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, mode); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(home, ".config", "sandbox-executable", "config.json"), `{"memory":"8G"}`, 0o600)
	write(filepath.Join(d, "code", ProjectFileName), `{"rw":["../out"],"net":["allow:a.com","allow:b.com"],"pids":2048,"persist_cache":true}`, 0o644)
	files, err := Find(proj, home, "")
	if err != nil || len(files) != 2 {
		t.Fatalf("%+v %v", files, err)
	}
	s := files[0].Settings.Merge(files[1].Settings)
	dec, err := s.Decide()
	if err != nil {
		t.Fatal(err)
	}
	if dec.Memory.Value != 8192 || dec.Pids.Value != 2048 || dec.Changes.Writable[0].Path != filepath.Join(d, "out") || dec.PersistCache == "" || len(dec.Changes.Net.Allow) != 2 {
		t.Errorf("decided: %+v", dec)
	}
	if !strings.HasSuffix(dec.Changes.Writable[0].From, ProjectFileName+": rw[0]") {
		t.Errorf("from: %s", dec.Changes.Writable[0].From)
	}
	// The nearest file wins; a file others may write is not read.
	write(filepath.Join(d, "code", "proj", ProjectFileName), `{"memory":"1G"}`, 0o666)
	files, err = Find(proj, home, "")
	if err != nil || len(files) != 2 || !strings.Contains(files[1].Ignored, "writable by its group or by others") {
		t.Fatalf("%+v %v", files, err)
	}
	// An unknown key is refused: it could be a restriction misspelled.
	write(filepath.Join(d, "code", "proj", ProjectFileName), `{"hdie":["~/.aws"]}`, 0o644)
	if _, err := Find(proj, home, ""); err == nil || !strings.Contains(err.Error(), `unknown field "hdie"`) {
		t.Errorf("unknown key: %v", err)
	}
}
