// Package userscope asks the calling user's systemd manager for a cgroup of
// the user's own: a transient scope unit with Delegate=yes that holds this
// process, as `systemd-run --user --scope -p Delegate=yes` makes one.
//
// It is for an unprivileged process whose cgroup it may not manage (an SSH
// login's root-owned session-N.scope): once Join returns, the process sits in
// the new scope, whose cgroup the user owns, and can make its own groups
// below it. The scope is collected by systemd when its last process is gone
// (CollectMode=inactive-or-failed): nothing is left behind, whichever way the
// process ends.
//
// Only Join talks D-Bus, and nothing in this package runs unless it is
// called: a process that already has a cgroup it may manage pays nothing.
package userscope

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/godbus/dbus/v5"
)

const (
	busName     = "org.freedesktop.systemd1"
	managerPath = dbus.ObjectPath("/org/freedesktop/systemd1")
	managerIfc  = "org.freedesktop.systemd1.Manager"
)

// Options says how to reach the manager and what to call the unit.
type Options struct {
	// Addresses are the D-Bus addresses to try, in order, the first that
	// accepts a connection being used. Empty: Addresses(os.Getenv).
	Addresses []Address
	// Prefix starts the unit's name ("sandbox-executable-"); the rest is
	// the pid and a random part, and ".scope".
	Prefix string
	// Description is the unit's Description=.
	Description string
}

// Address is one way to the user's manager.
type Address struct {
	// Addr is a D-Bus address ("unix:path=/run/user/1000/bus").
	Addr string
	// Direct is true for the manager's own socket (no bus daemon: no
	// Hello, no match rules; the manager sends its signals to every such
	// peer).
	Direct bool
}

// Addresses returns where the user's manager may be reached, in the order
// tried: its private socket ($XDG_RUNTIME_DIR/systemd/private, as systemctl
// --user tries first: one hop, and there without a user bus), then the user
// bus ($DBUS_SESSION_BUS_ADDRESS, else $XDG_RUNTIME_DIR/bus).
// $XDG_RUNTIME_DIR defaults to /run/user/<uid>.
func Addresses(getenv func(string) string) []Address {
	rt := getenv("XDG_RUNTIME_DIR")
	if rt == "" || !strings.HasPrefix(rt, "/") {
		rt = "/run/user/" + strconv.Itoa(os.Getuid())
	}
	out := []Address{{Addr: "unix:path=" + escape(rt+"/systemd/private"), Direct: true}}
	if a := getenv("DBUS_SESSION_BUS_ADDRESS"); a != "" && !strings.HasPrefix(a, "autolaunch:") {
		out = append(out, Address{Addr: a})
	} else {
		out = append(out, Address{Addr: "unix:path=" + escape(rt+"/bus")})
	}
	return out
}

// escape quotes a value for a D-Bus address (its optionally-escaped bytes
// pass, every other byte as %XX).
func escape(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		c := v[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_/\\.*", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02x", c)
		}
	}
	return b.String()
}

// Scope is the unit Join made.
type Scope struct {
	// Unit is its name ("sandbox-executable-1234-0a1b2c3d.scope").
	Unit string
	// Via is the address the manager was reached at.
	Via string
}

// Join asks the user's systemd manager to start a transient scope unit with
// Delegate=yes holding this process, and returns when the manager's job for
// it has finished ("done": the process is in the scope's cgroup) or ctx
// ends. The connection is closed before it returns.
//
// It fails when no manager answers at any address, when the manager refuses
// the unit, or when the job ends other than "done"; the error says which,
// in one line.
func Join(ctx context.Context, opt Options) (Scope, error) {
	name, err := unitName(opt.Prefix)
	if err != nil {
		return Scope{}, err
	}
	conn, a, err := dial(ctx, opt)
	if err != nil {
		return Scope{}, err
	}
	err = start(ctx, conn, a, name, opt.Description)
	conn.Close()
	if err != nil {
		return Scope{}, fmt.Errorf("systemd user manager at %s: %w", a.Addr, err)
	}
	return Scope{Unit: name, Via: a.Addr}, nil
}

// dial connects to the first of the user manager's addresses (opt's, or
// Addresses) that answers; its error is ErrNoManager, wrapped with every
// address tried and why each failed, when none does.
func dial(ctx context.Context, opt Options) (*dbus.Conn, Address, error) {
	addrs := opt.Addresses
	if len(addrs) == 0 {
		addrs = Addresses(os.Getenv)
	}
	var tried, why []string
	for _, a := range addrs {
		conn, err := connect(ctx, a)
		if err == nil {
			return conn, a, nil
		}
		tried = append(tried, a.Addr)
		if r := reason(err); !slices.Contains(why, r) {
			why = append(why, r)
		}
	}
	return nil, Address{}, fmt.Errorf("%w at %s (%s)", ErrNoManager, strings.Join(tried, " or "), strings.Join(why, "; "))
}

// ErrNoManager is Join's error when no user manager answered at any address
// (none runs for this user): the caller's plain refusal stands.
var ErrNoManager = errors.New("no systemd user manager answered")

// reason is what is left of a connection's error once the address it names
// is taken away ("connect: no such file or directory").
func reason(err error) string {
	var op *net.OpError
	if errors.As(err, &op) && op.Err != nil {
		return op.Err.Error()
	}
	var ce *connError
	if errors.As(err, &ce) {
		return ce.what + ": " + ce.err.Error()
	}
	return err.Error()
}

// connError is a failure after the socket connected.
type connError struct {
	what string
	err  error
}

func (e *connError) Error() string { return e.what + ": " + e.err.Error() }
func (e *connError) Unwrap() error { return e.err }

func unitName(prefix string) (string, error) {
	if prefix == "" {
		prefix = "userscope-"
	}
	var r [4]byte
	if _, err := rand.Read(r[:]); err != nil {
		return "", err
	}
	return prefix + strconv.Itoa(os.Getpid()) + "-" + hex.EncodeToString(r[:]) + ".scope", nil
}

// connect dials a, authenticates (EXTERNAL: the kernel's peer credentials)
// and, on a bus, says Hello.
func connect(ctx context.Context, a Address) (*dbus.Conn, error) {
	conn, err := dbus.Dial(a.Addr, dbus.WithContext(ctx))
	if err != nil {
		return nil, err
	}
	fail := func(what string, err error) (*dbus.Conn, error) {
		conn.Close()
		return nil, &connError{what, err}
	}
	if err := conn.Auth([]dbus.Auth{dbus.AuthExternal(strconv.Itoa(os.Getuid()))}); err != nil {
		return fail("authentication", err)
	}
	if !a.Direct {
		if err := conn.Hello(); err != nil {
			return fail("hello", err)
		}
	}
	return conn, nil
}

// property is one (sv) of StartTransientUnit's properties.
type property struct {
	Name  string
	Value dbus.Variant
}

// auxUnit is one a(sa(sv)) entry (none are sent).
type auxUnit struct {
	Name  string
	Props []property
}

// start calls StartTransientUnit and waits for its job's JobRemoved.
func start(ctx context.Context, conn *dbus.Conn, a Address, name, desc string) error {
	if desc == "" {
		desc = name
	}
	// Listen before the call: the signal may arrive before the reply.
	sigs := make(chan *dbus.Signal, 32)
	conn.Signal(sigs)
	if !a.Direct {
		// A bus daemon forwards broadcast signals only to those who asked.
		if err := conn.AddMatchSignalContext(ctx, dbus.WithMatchSender(busName), dbus.WithMatchObjectPath(managerPath),
			dbus.WithMatchInterface(managerIfc), dbus.WithMatchMember("JobRemoved")); err != nil {
			return fmt.Errorf("AddMatch for JobRemoved: %w", err)
		}
	}
	props := []property{
		{"Description", dbus.MakeVariant(desc)},
		{"PIDs", dbus.MakeVariant([]uint32{uint32(os.Getpid())})},
		{"Delegate", dbus.MakeVariant(true)},
		// Unloaded once inactive, failed or not: no unit stays behind.
		{"CollectMode", dbus.MakeVariant("inactive-or-failed")},
	}
	var job dbus.ObjectPath
	obj := conn.Object(busName, managerPath)
	// "fail": never replace or wait behind another job for this name.
	if err := obj.CallWithContext(ctx, managerIfc+".StartTransientUnit", 0, name, "fail", props, []auxUnit{}).Store(&job); err != nil {
		return fmt.Errorf("StartTransientUnit %s: %w", name, err)
	}
	for {
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for the job of %s: %w", name, ctx.Err())
		case s, ok := <-sigs:
			if !ok {
				return fmt.Errorf("waiting for the job of %s: connection closed", name)
			}
			path, result, ok := jobRemoved(s)
			if !ok || path != job {
				continue
			}
			if result != "done" {
				return fmt.Errorf("job for %s ended %q", name, result)
			}
			return nil
		}
	}
}

// jobRemoved decodes a JobRemoved(u id, o job, s unit, s result) signal.
func jobRemoved(s *dbus.Signal) (dbus.ObjectPath, string, bool) {
	if s == nil || s.Name != managerIfc+".JobRemoved" || s.Path != managerPath || len(s.Body) != 4 {
		return "", "", false
	}
	path, ok1 := s.Body[1].(dbus.ObjectPath)
	result, ok2 := s.Body[3].(string)
	return path, result, ok1 && ok2
}
