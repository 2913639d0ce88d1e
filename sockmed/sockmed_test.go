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
