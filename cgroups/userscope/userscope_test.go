package userscope

import (
	"bytes"
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"

	"sandbox-executable/internal/testcap"
)

// The tests speak the real wire protocol: a dbus-daemon (Debian's dbus-daemon
// package) started for each test on a socket of its own, and a fake manager
// that owns org.freedesktop.systemd1 on it and answers StartTransientUnit as
// systemd does (a job path, then JobRemoved for it). Nothing here moves a
// process: the guest test (integration/vm/systemd) does that for real.

func startBus(t *testing.T) string {
	t.Helper()
	daemon, err := exec.LookPath("dbus-daemon")
	if err != nil {
		testcap.Skipf(t, testcap.Installed, "no dbus-daemon (apt install dbus-daemon)")
	}
	dir := t.TempDir()
	sock := filepath.Join(dir, "bus")
	conf := filepath.Join(dir, "bus.conf")
	if err := os.WriteFile(conf, []byte(`<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:path=`+sock+`</listen>
  <auth>EXTERNAL</auth>
  <policy context="default">
    <allow send_destination="*"/>
    <allow receive_sender="*"/>
    <allow own="*"/>
  </policy>
</busconfig>
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(daemon, "--config-file="+conf, "--nofork", "--nopidfile")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		if t.Failed() {
			t.Logf("dbus-daemon: %s", stderr.String())
		}
	})
	for i := 0; ; i++ {
		// The socket is bound before it listens: wait for a connection.
		if c, err := net.Dial("unix", sock); err == nil {
			c.Close()
			break
		}
		if i == 500 {
			t.Fatal("dbus-daemon made no socket")
		}
		time.Sleep(10 * time.Millisecond)
	}
	return "unix:path=" + sock
}

// call is what the fake manager was asked.
type call struct {
	name, mode string
	props      map[string]any
	aux        int
}

type fakeManager struct {
	conn *dbus.Conn
	// result is the JobRemoved result to send ("" : never send one).
	result string
	// signalFirst sends JobRemoved before the reply (systemd may).
	signalFirst bool
	// refuse answers with this D-Bus error instead.
	refuse string

	mu    sync.Mutex
	calls []call
}

// StartTransientUnit is the fake's side of the call (signature
// ssa(sv)a(sa(sv)) -> o).
func (m *fakeManager) StartTransientUnit(name, mode string, props []property, aux []auxUnit) (dbus.ObjectPath, *dbus.Error) {
	c := call{name: name, mode: mode, props: map[string]any{}, aux: len(aux)}
	for _, p := range props {
		c.props[p.Name] = p.Value.Value()
	}
	m.mu.Lock()
	m.calls = append(m.calls, c)
	n := len(m.calls)
	m.mu.Unlock()
	if m.refuse != "" {
		return "", dbus.NewError(m.refuse, []any{"Unit " + name + " already exists."})
	}
	job := dbus.ObjectPath("/org/freedesktop/systemd1/job/" + string(rune('0'+n)))
	send := func() {
		// Another client's job first: Join must wait for its own.
		m.conn.Emit(managerPath, managerIfc+".JobRemoved", uint32(99), dbus.ObjectPath("/org/freedesktop/systemd1/job/99"), "other.service", "failed")
		m.conn.Emit(managerPath, managerIfc+".JobRemoved", uint32(n), job, name, m.result)
	}
	if m.result != "" {
		if m.signalFirst {
			send()
		} else {
			go func() { time.Sleep(20 * time.Millisecond); send() }()
		}
	}
	return job, nil
}

func (m *fakeManager) seen() []call {
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.calls)
}

func startManager(t *testing.T, addr string, m *fakeManager) {
	t.Helper()
	conn, err := dbus.Connect(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	m.conn = conn
	if err := conn.Export(m, managerPath, managerIfc); err != nil {
		t.Fatal(err)
	}
	r, err := conn.RequestName(busName, dbus.NameFlagDoNotQueue)
	if err != nil || r != dbus.RequestNameReplyPrimaryOwner {
		t.Fatalf("RequestName: %v %v", r, err)
	}
}

func join(t *testing.T, addr string, d time.Duration) (Scope, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	// The first address has no manager (a private socket that is not
	// there): Join goes on to the bus.
	missing := "unix:path=" + filepath.Join(t.TempDir(), "private")
	return Join(ctx, Options{Prefix: "se-test-", Description: "a test", Addresses: []Address{{Addr: missing, Direct: true}, {Addr: addr}}})
}

func TestJoinAsksForADelegatedScopeOfItself(t *testing.T) {
	for _, first := range []bool{false, true} {
		addr := startBus(t)
		m := &fakeManager{result: "done", signalFirst: first}
		startManager(t, addr, m)
		sc, err := join(t, addr, 10*time.Second)
		if err != nil {
			t.Fatalf("signal first %v: %v", first, err)
		}
		if sc.Via != addr || !strings.HasPrefix(sc.Unit, "se-test-") || !strings.HasSuffix(sc.Unit, ".scope") {
			t.Errorf("scope %+v", sc)
		}
		calls := m.seen()
		if len(calls) != 1 {
			t.Fatalf("%d calls", len(calls))
		}
		c := calls[0]
		if c.name != sc.Unit || c.mode != "fail" || c.aux != 0 {
			t.Errorf("call %+v", c)
		}
		if pids, _ := c.props["PIDs"].([]uint32); !slices.Equal(pids, []uint32{uint32(os.Getpid())}) {
			t.Errorf("PIDs %v, want this process", c.props["PIDs"])
		}
		if c.props["Delegate"] != true || c.props["CollectMode"] != "inactive-or-failed" || c.props["Description"] != "a test" {
			t.Errorf("properties %v", c.props)
		}
	}
}

func TestJoinFailsWhenTheJobFails(t *testing.T) {
	addr := startBus(t)
	startManager(t, addr, &fakeManager{result: "failed"})
	_, err := join(t, addr, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), `ended "failed"`) {
		t.Fatalf("err %v", err)
	}
}

func TestJoinFailsWhenTheManagerRefuses(t *testing.T) {
	addr := startBus(t)
	startManager(t, addr, &fakeManager{refuse: "org.freedesktop.systemd1.UnitExists"})
	_, err := join(t, addr, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "already exists") || !strings.Contains(err.Error(), addr) {
		t.Fatalf("err %v", err)
	}
}

func TestJoinGivesUpWhenNoJobEnds(t *testing.T) {
	addr := startBus(t)
	startManager(t, addr, &fakeManager{})
	_, err := join(t, addr, 300*time.Millisecond)
	if err == nil || !strings.Contains(err.Error(), "deadline exceeded") {
		t.Fatalf("err %v", err)
	}
}

func TestJoinWithoutAManager(t *testing.T) {
	// A bus with nobody owning org.freedesktop.systemd1.
	addr := startBus(t)
	_, err := join(t, addr, 10*time.Second)
	if err == nil || !strings.Contains(err.Error(), "StartTransientUnit") {
		t.Fatalf("err %v", err)
	}
	// No bus at all: one line naming where it looked and why.
	dir := t.TempDir()
	_, err = Join(context.Background(), Options{Addresses: Addresses(func(k string) string {
		return map[string]string{"XDG_RUNTIME_DIR": dir}[k]
	})})
	want := "no systemd user manager answered at unix:path=" + dir + "/systemd/private or unix:path=" + dir + "/bus (connect: no such file or directory)"
	if err == nil || err.Error() != want {
		t.Fatalf("err %v\nwant %s", err, want)
	}
}

func TestAddresses(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	got := Addresses(env(map[string]string{"XDG_RUNTIME_DIR": "/run/user/7", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/x/bus,guid=1"}))
	want := []Address{{Addr: "unix:path=/run/user/7/systemd/private", Direct: true}, {Addr: "unix:path=/x/bus,guid=1"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v", got)
	}
	got = Addresses(env(map[string]string{"XDG_RUNTIME_DIR": "/r u,n", "DBUS_SESSION_BUS_ADDRESS": "autolaunch:"}))
	want = []Address{{Addr: "unix:path=/r%20u%2cn/systemd/private", Direct: true}, {Addr: "unix:path=/r%20u%2cn/bus"}}
	if !slices.Equal(got, want) {
		t.Errorf("got %v", got)
	}
	if got := Addresses(env(nil)); got[0].Addr != "unix:path=/run/user/"+strconv.Itoa(os.Getuid())+"/systemd/private" {
		t.Errorf("got %v", got)
	}
}
