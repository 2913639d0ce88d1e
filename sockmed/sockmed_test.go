package sockmed

import "testing"

func TestReachable(t *testing.T) {
	m := New(Config{Roots: []string{"/ws", "/tmp/private"}, Denied: []string{"/ws/.git"}})
	for path, want := range map[string]bool{
		"/ws/s.sock": true, "/ws/src/a/b.sock": true, "/tmp/private/x": true,
		"/ws/.git/hooks.sock": false, "/ws/.git": false, "/wsx/s.sock": false, "/run/docker.sock": false, "/tmp/s": false,
	} {
		if got := m.reachable(path); got != want {
			t.Errorf("%s: %v, want %v", path, got, want)
		}
	}
}

func TestUnixLine(t *testing.T) {
	for line, want := range map[string][2]string{
		"0000000000000000: 00000002 00000000 00010000 0001 01 12345 @/tmp/.X11-unix/X0": {"12345", "@/tmp/.X11-unix/X0"},
		"0000000000000000: 00000002 00000000 00010000 0001 01  9876 /run/a b.sock":      {"9876", "/run/a b.sock"},
	} {
		ino, path, ok := unixLine(line)
		if !ok || ino != want[0] || path != want[1] {
			t.Errorf("%q: %q %q %v", line, ino, path, ok)
		}
	}
	if _, _, ok := unixLine("0000000000000000: 00000002 00000000 00010000 0001 01 12345"); ok {
		t.Errorf("an unnamed socket has a path")
	}
}
