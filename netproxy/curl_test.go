package netproxy

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"sandbox-executable/internal/testcap"
	"sandbox-executable/policy"
)

// TestCurl drives the proxy with curl, the way sandboxed programs will.
func TestCurl(t *testing.T) {
	curl, err := exec.LookPath("curl")
	if err != nil {
		testcap.Skipf(t, testcap.Installed, "curl not installed")
	}
	o := startOrigin(t)
	e := newEnv(t, envConfig{
		entries: []policy.HostPort{hp("*.web.test", o.port)},
		hosts:   map[string]string{"www.web.test": "127.0.0.1", "denied.test": "127.0.0.1"},
	})
	run := func(args ...string) (string, string, int) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, curl, append([]string{"-sS", "--max-time", "10"}, args...)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		code := 0
		if err != nil {
			ee, ok := err.(*exec.ExitError)
			if !ok {
				t.Fatalf("curl: %v", err)
			}
			code = ee.ExitCode()
		}
		return stdout.String(), stderr.String(), code
	}
	httpProxy := "http://" + e.addr
	socksProxy := "socks5h://" + e.addr
	allowed := fmt.Sprintf("http://www.web.test:%d/p?x=1", o.port)
	denied := fmt.Sprintf("http://denied.test:%d/", o.port)
	want := fmt.Sprintf("hello www.web.test:%d /p?x=1 ", o.port)

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"plain", []string{"-x", httpProxy, "-U", "user:secret", allowed}},
		{"connect", []string{"-p", "-x", httpProxy, allowed}},
		{"socks5h", []string{"-x", socksProxy, allowed}},
		{"plain-keepalive", []string{"-x", httpProxy, allowed, allowed}},
	} {
		out, errOut, code := run(tc.args...)
		wantOut := want
		if tc.name == "plain-keepalive" {
			wantOut = want + want
		}
		if code != 0 || out != wantOut {
			t.Errorf("%s: exit %d, out %q, stderr %q; want %q", tc.name, code, out, errOut, wantOut)
		}
	}
	got, _ := o.last()
	if got.Header.Get("Proxy-Authorization") != "" || got.RequestURI != "/p?x=1" {
		t.Errorf("origin saw %q with headers %v", got.RequestURI, got.Header)
	}

	out, _, code := run("-x", httpProxy, "-w", "%{http_code}", denied)
	if code != 0 || out != fmt.Sprintf("sandbox-executable: denied.test:%d is not in the network allowlist\n403", o.port) {
		t.Errorf("plain denied: exit %d, out %q", code, out)
	}
	_, errOut, code := run("-p", "-x", httpProxy, denied)
	if code != 56 || !strings.Contains(errOut, "403") {
		t.Errorf("connect denied: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run("-x", socksProxy, denied)
	if code != 97 || !strings.Contains(errOut, "(2)") { // reply 0x02
		t.Errorf("socks5h denied: exit %d, stderr %q", code, errOut)
	}
	_, errOut, code = run("-p", "-x", httpProxy, fmt.Sprintf("http://127.0.0.1:%d/", o.port))
	if code != 56 || !strings.Contains(errOut, "403") {
		t.Errorf("connect to an IP literal: exit %d, stderr %q", code, errOut)
	}
	if s := e.p.Stats(); s.Allowed != 5 || s.Refused != 4 {
		t.Errorf("stats %+v", s)
	}
}
