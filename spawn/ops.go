package spawn

/*
#include "stage.h"
*/
import "C"

import (
	"fmt"
	"net/netip"
	"strings"

	"golang.org/x/sys/unix"
)

// Op is one step the child carries out in its new namespaces, after joining
// its cgroups and before anything else: a mount, a file it writes, a
// directory it enters. Ops are made only by the constructors below, each
// named after what it does; every constructor takes why, the words an error
// message uses for it ("mask /home/u/.ssh"). A recipe's list reads like
// the mount table it produces (see String).
type Op struct {
	kind       OpKind
	slot       int     // a tree slot, or the subtree flag of SetReadOnly
	num        uintptr // mount or attribute flags, a mode, a port, rights
	a, b, c, d string
	// ida and idb are what the paths a and b must be when the stage
	// takes them (see Taking); lowerIsTarget gives an overlay its lower
	// directory as the target's descriptor.
	ida, idb      Ident
	lowerIsTarget bool
	why           string
	addr          netip.Addr // ListenAndHandOver's address
	backlog       int        // and its listen backlog
}

// Ident is what a host path of an operation must be when the stage takes
// it: the stage opens it once without following a symbolic link anywhere on
// its way, compares it with Ident, and works through that descriptor, so
// that no mount, bind, chdir or rule follows a path a program could change
// after the decision (stage.h). The zero Ident checks nothing: a path of
// the stage's own making.
type Ident struct {
	kind     int
	Dev, Ino uint64
}

// Kinds of Ident (stage.h's enum se_ident_kind).
const (
	identNone        = C.SE_ID_NONE
	identFile        = C.SE_ID_FILE
	identPlaceholder = C.SE_ID_PLACEHOLDER
	identAny         = C.SE_ID_ANY
)

// FileIdent is the file dev, ino, as the decision saw it.
func FileIdent(dev, ino uint64) Ident { return Ident{kind: identFile, Dev: dev, Ino: ino} }

// PlaceholderIdent is a placeholder the run makes: the runner fills in its
// identity once it has made (or found recorded) it.
var PlaceholderIdent = Ident{kind: identPlaceholder}

// AnyIdent is a path taken without following a link but not compared: the
// root of a mount the stage made itself.
var AnyIdent = Ident{kind: identAny}

// Taking returns o with its paths required to be a and b (a bind's source
// and target; for the other operations b is their target when it is a
// path, else a).
func (o Op) Taking(a, b Ident) Op {
	o.ida, o.idb = a, b
	return o
}

// LowerIsTarget returns the overlay mount o with its lower directory given
// as its target's descriptor (MountNew's options then hold no lowerdir).
func (o Op) LowerIsTarget() Op {
	o.lowerIsTarget = true
	return o
}

// Slot names one of the MaxSlots places the child keeps a cloned mount tree
// in between CloneTree and AttachTree.
type Slot int

// Why is what the operation is for, as error messages name it.
func (o Op) Why() string { return o.why }

// Kind is the kind of the operation.
func (o Op) Kind() OpKind { return o.kind }

// Target is the path the operation changes (a mount point, a file made or
// written, a directory entered); empty for the loopback and the listener.
func (o Op) Target() string {
	switch o.kind {
	case OpMount:
		return o.b
	case OpSymlink:
		return o.b
	case OpLoUp, OpListenSend:
		return ""
	}
	return o.a
}

// WriteFile writes content to the existing file path (uid_map, setgroups).
func WriteFile(path, content, why string) Op {
	return Op{kind: OpWrite, a: path, b: content, why: why}
}

// Chdir enters dir, looked up in the child's own view.
func Chdir(dir, why string) Op { return Op{kind: OpChdir, a: dir, why: why} }

// LoopbackUp brings up the loopback interface of the child's network
// namespace.
func LoopbackUp(why string) Op { return Op{kind: OpLoUp, why: why} }

// The proxy listener's address and backlog (ListenAndHandOver).
var (
	ProxyListenAddr    = netip.AddrFrom4([4]byte{127, 0, 0, 1})
	ProxyListenBacklog = 512
)

// ListenAndHandOver listens on ProxyListenAddr:port (TCP) in the child's
// network namespace and sends the listening socket to the runner, which
// gives it to Go (Service.ProxyListener): the proxy serves it from outside.
func ListenAndHandOver(port uint16, why string) Op {
	return ListenOnAndHandOver(ProxyListenAddr, port, ProxyListenBacklog, why)
}

// ListenOnAndHandOver is ListenAndHandOver on the IPv4 address addr with a
// listen backlog of backlog.
func ListenOnAndHandOver(addr netip.Addr, port uint16, backlog int, why string) Op {
	return Op{kind: OpListenSend, num: uintptr(port), addr: addr.Unmap(), backlog: backlog, why: why}
}

// MakePrivate makes the mount at path and every mount beneath it private,
// so that nothing mounted in the child propagates back to the host.
func MakePrivate(path, why string) Op {
	return Op{kind: OpMount, b: path, num: unix.MS_REC | unix.MS_PRIVATE, why: why}
}

// MountNew mounts a new filesystem of type fstype (tmpfs, proc, devpts,
// overlay) on target with the MS_* flags and the filesystem's options.
func MountNew(fstype, target string, flags uintptr, options, why string) Op {
	return Op{kind: OpMount, a: fstype, b: target, c: fstype, num: flags, d: options, why: why}
}

// Bind binds source on target (with every mount beneath source if
// recursive).
func Bind(source, target string, recursive bool, why string) Op {
	flags := uintptr(unix.MS_BIND)
	if recursive {
		flags |= unix.MS_REC
	}
	return Op{kind: OpMount, a: source, b: target, num: flags, why: why}
}

// RemountBind changes the flags of the bind mount at target to MS_* flags
// (MS_RDONLY, MS_NOSUID...): MS_REMOUNT|MS_BIND are added.
func RemountBind(target string, flags uintptr, why string) Op {
	return Op{kind: OpMount, b: target, num: unix.MS_REMOUNT | unix.MS_BIND | flags, why: why}
}

// SetReadOnly makes the mount at path read-only, with every mount beneath it
// if recursive (mount_setattr MOUNT_ATTR_RDONLY).
func SetReadOnly(path string, recursive bool, why string) Op {
	o := Op{kind: OpSetAttr, a: path, num: unix.MOUNT_ATTR_RDONLY, why: why}
	if recursive {
		o.slot = 1
	}
	return o
}

// CloneTree clones the mount tree at path, with every mount beneath it, into
// slot (open_tree OPEN_TREE_CLONE|AT_RECURSIVE): it keeps the tree as it is
// now whatever later operations do to path.
func CloneTree(slot Slot, path, why string) Op {
	return Op{kind: OpOpenTree, slot: int(slot), a: path, why: why}
}

// AttachTree mounts the tree held in slot on path (move_mount).
func AttachTree(slot Slot, path, why string) Op {
	return Op{kind: OpMoveMount, slot: int(slot), a: path, why: why}
}

// Mkdir makes the directory path with mode.
func Mkdir(path string, mode uint32, why string) Op {
	return Op{kind: OpMkdir, a: path, num: uintptr(mode), why: why}
}

// CreateFile makes the empty regular file path with mode (something to bind
// a file on).
func CreateFile(path string, mode uint32, why string) Op {
	return Op{kind: OpCreate, a: path, num: uintptr(mode), why: why}
}

// Symlink makes link a symbolic link to target.
func Symlink(target, link, why string) Op {
	return Op{kind: OpSymlink, a: target, b: link, why: why}
}

// OpenAndHandOver opens the directory dir as the child sees it when the
// operation runs (O_PATH, not following a link) and sends it to the runner
// (Service.Layers): what is mounted there stays reachable through it after
// the child's namespace is gone.
func OpenAndHandOver(dir, why string) Op { return Op{kind: OpOpenSend, a: dir, why: why} }

// LandlockRule grants the Landlock filesystem rights access beneath dir in
// the run's ruleset, as the child sees dir: for directories the mounts made
// new (a rule names an inode, and a mount over a directory hides the rules
// given to the one below). A missing dir is skipped.
func LandlockRule(dir string, access uint64, why string) Op {
	return Op{kind: OpLandlockRule, a: dir, num: uintptr(access), why: why}
}

var mountFlagNames = []struct {
	flag uintptr
	name string
}{
	{unix.MS_RDONLY, "MS_RDONLY"}, {unix.MS_NOSUID, "MS_NOSUID"}, {unix.MS_NODEV, "MS_NODEV"},
	{unix.MS_NOEXEC, "MS_NOEXEC"}, {unix.MS_REMOUNT, "MS_REMOUNT"}, {unix.MS_BIND, "MS_BIND"},
	{unix.MS_REC, "MS_REC"}, {unix.MS_PRIVATE, "MS_PRIVATE"},
}

func mountFlags(f uintptr) string {
	var names []string
	for _, n := range mountFlagNames {
		if f&n.flag != 0 {
			names = append(names, n.name)
			f &^= n.flag
		}
	}
	if f != 0 || len(names) == 0 {
		names = append(names, fmt.Sprintf("%#x", f))
	}
	return strings.Join(names, "|")
}

// String is the operation as one line of the child's setup, in the words of
// the call it makes: `mount("tmpfs", "/dev", "tmpfs", MS_NOSUID|MS_NODEV,
// "mode=0755")`, `open_tree(slot 0, "/work")`.
func (o Op) String() string {
	switch o.kind {
	case OpMount:
		d := o.d
		if o.lowerIsTarget {
			// The target's own descriptor, as the stage passes it.
			d = strings.TrimSuffix("lowerdir=fd("+o.b+"),"+d, ",")
		}
		return fmt.Sprintf("mount(%q, %q, %q, %s, %q)", o.a, o.b, o.c, mountFlags(o.num), d)
	case OpWrite:
		return fmt.Sprintf("write(%q, %q)", o.a, o.b)
	case OpChdir:
		return fmt.Sprintf("chdir(%q)", o.a)
	case OpSetAttr:
		sub := ""
		if o.slot == 1 {
			sub = ", AT_RECURSIVE"
		}
		return fmt.Sprintf("mount_setattr(%q, MOUNT_ATTR_RDONLY%s)", o.a, sub)
	case OpOpenTree:
		return fmt.Sprintf("open_tree(slot %d, %q)", o.slot, o.a)
	case OpMoveMount:
		return fmt.Sprintf("move_mount(slot %d, %q)", o.slot, o.a)
	case OpLoUp:
		return "ip link set lo up"
	case OpListenSend:
		return fmt.Sprintf("listen(%s) and send it over the proxy socket", netip.AddrPortFrom(o.addr, uint16(o.num)))
	case OpMkdir:
		return fmt.Sprintf("mkdir(%q, %#o)", o.a, o.num)
	case OpCreate:
		return fmt.Sprintf("create(%q, %#o)", o.a, o.num)
	case OpSymlink:
		return fmt.Sprintf("symlink(%q, %q)", o.a, o.b)
	case OpLandlockRule:
		return fmt.Sprintf("landlock_add_rule(%q, %#x)", o.a, o.num)
	case OpOpenSend:
		return fmt.Sprintf("open(%q, O_PATH) and send it over the proxy socket", o.a)
	}
	return fmt.Sprintf("op %d", o.kind)
}
