package userscope

import (
	"context"
	"fmt"
	"strings"

	"github.com/godbus/dbus/v5"
)

// Manager is what the user's manager said about itself.
type Manager struct {
	// Via is the address it was reached at.
	Via string
	// Version is its Version property ("252.30-1~deb12u2").
	Version string
	// ControlGroup is its own cgroup, relative to the cgroup2 root
	// ("/user.slice/user-1000.slice/user@1000.service"); a scope Join
	// makes lies below it. Empty when it did not say.
	ControlGroup string
}

// Ask finds the user's systemd manager as Join would and reads two of its
// properties (Version, ControlGroup). It changes nothing: no unit is made,
// nothing is left behind. Its error is ErrNoManager, wrapped, when no
// manager answered at any address.
func Ask(ctx context.Context, opt Options) (Manager, error) {
	conn, a, err := dial(ctx, opt)
	if err != nil {
		return Manager{}, err
	}
	defer conn.Close()
	m := Manager{Via: a.Addr}
	obj := conn.Object(busName, managerPath)
	get := func(name string) (string, error) {
		var v dbus.Variant
		if err := obj.CallWithContext(ctx, "org.freedesktop.DBus.Properties.Get", 0, managerIfc, name).Store(&v); err != nil {
			return "", err
		}
		s, ok := v.Value().(string)
		if !ok {
			return "", fmt.Errorf("%s is a %s, not a string", name, v.Signature())
		}
		return s, nil
	}
	if m.Version, err = get("Version"); err != nil {
		return Manager{}, fmt.Errorf("systemd user manager at %s: Version: %w", a.Addr, err)
	}
	if cg, err := get("ControlGroup"); err == nil && strings.HasPrefix(cg, "/") {
		m.ControlGroup = cg
	}
	return m, nil
}
