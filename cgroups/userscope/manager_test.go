package userscope

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/godbus/dbus/v5"
)

// fakeProps answers org.freedesktop.DBus.Properties.Get for the manager.
type fakeProps struct{ props map[string]string }

func (p fakeProps) Get(iface, name string) (dbus.Variant, *dbus.Error) {
	if v, ok := p.props[name]; ok && iface == managerIfc {
		return dbus.MakeVariant(v), nil
	}
	return dbus.Variant{}, dbus.NewError("org.freedesktop.DBus.Error.UnknownProperty", []any{"no " + name})
}

func TestAskReadsAndMakesNothing(t *testing.T) {
	addr := startBus(t)
	m := &fakeManager{result: "done"}
	startManager(t, addr, m)
	if err := m.conn.Export(fakeProps{map[string]string{"Version": "252.30", "ControlGroup": "/user.slice/user-1000.slice/user@1000.service"}},
		managerPath, "org.freedesktop.DBus.Properties"); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	missing := "unix:path=" + filepath.Join(t.TempDir(), "private")
	got, err := Ask(ctx, Options{Addresses: []Address{{Addr: missing, Direct: true}, {Addr: addr}}})
	if err != nil {
		t.Fatal(err)
	}
	want := Manager{Via: addr, Version: "252.30", ControlGroup: "/user.slice/user-1000.slice/user@1000.service"}
	if got != want {
		t.Errorf("Ask = %+v, want %+v", got, want)
	}
	if c := m.seen(); len(c) != 0 {
		t.Errorf("Ask made units: %+v", c)
	}

	// A manager that does not say where its cgroup is: only the version.
	m.conn.Export(nil, managerPath, "org.freedesktop.DBus.Properties")
	if err := m.conn.Export(fakeProps{map[string]string{"Version": "239"}}, managerPath, "org.freedesktop.DBus.Properties"); err != nil {
		t.Fatal(err)
	}
	if got, err := Ask(ctx, Options{Addresses: []Address{{Addr: addr}}}); err != nil || got.Version != "239" || got.ControlGroup != "" {
		t.Errorf("without ControlGroup: %+v, %v", got, err)
	}

	// Nobody on any address.
	_, err = Ask(ctx, Options{Addresses: []Address{{Addr: missing, Direct: true}}})
	if !errors.Is(err, ErrNoManager) {
		t.Errorf("no manager: %v", err)
	}
}
