// Package landlock translates a Plan into Landlock rules: read and execute
// everywhere, write only beneath the writable roots, no access to what the
// Plan denies, TCP and IPC scoping where the kernel has them. The rules are
// values (Spec); the runner (spawn) builds the ruleset from them and the
// child stage enforces it just before exec. Nothing here restricts the
// calling process.
//
// Rights and ABI levels are plain values; what the running kernel cannot
// enforce is computed right by right and reported, never silently dropped.
package landlock

import (
	"golang.org/x/sys/unix"
)

// AccessFS is a set of Landlock filesystem rights.
type AccessFS uint64

// Filesystem rights (Landlock ABI level in brackets where above 1).
const (
	Execute    AccessFS = unix.LANDLOCK_ACCESS_FS_EXECUTE
	WriteFile  AccessFS = unix.LANDLOCK_ACCESS_FS_WRITE_FILE
	ReadFile   AccessFS = unix.LANDLOCK_ACCESS_FS_READ_FILE
	ReadDir    AccessFS = unix.LANDLOCK_ACCESS_FS_READ_DIR
	RemoveDir  AccessFS = unix.LANDLOCK_ACCESS_FS_REMOVE_DIR
	RemoveFile AccessFS = unix.LANDLOCK_ACCESS_FS_REMOVE_FILE
	MakeChar   AccessFS = unix.LANDLOCK_ACCESS_FS_MAKE_CHAR
	MakeDir    AccessFS = unix.LANDLOCK_ACCESS_FS_MAKE_DIR
	MakeReg    AccessFS = unix.LANDLOCK_ACCESS_FS_MAKE_REG
	MakeSock   AccessFS = unix.LANDLOCK_ACCESS_FS_MAKE_SOCK
	MakeFifo   AccessFS = unix.LANDLOCK_ACCESS_FS_MAKE_FIFO
	MakeBlock  AccessFS = unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK
	MakeSym    AccessFS = unix.LANDLOCK_ACCESS_FS_MAKE_SYM
	Refer      AccessFS = unix.LANDLOCK_ACCESS_FS_REFER        // [2]
	Truncate   AccessFS = unix.LANDLOCK_ACCESS_FS_TRUNCATE     // [3]
	IoctlDev   AccessFS = unix.LANDLOCK_ACCESS_FS_IOCTL_DEV    // [5]
	ResolveUnx AccessFS = unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX // [9]
)

var fsNames = []struct {
	r    AccessFS
	name string
}{
	{Execute, "execute"}, {WriteFile, "write_file"}, {ReadFile, "read_file"}, {ReadDir, "read_dir"},
	{RemoveDir, "remove_dir"}, {RemoveFile, "remove_file"}, {MakeChar, "make_char"}, {MakeDir, "make_dir"},
	{MakeReg, "make_reg"}, {MakeSock, "make_sock"}, {MakeFifo, "make_fifo"}, {MakeBlock, "make_block"},
	{MakeSym, "make_sym"}, {Refer, "refer"}, {Truncate, "truncate"}, {IoctlDev, "ioctl_dev"},
	{ResolveUnx, "resolve_unix"},
}

// Names lists the rights in a, in the kernel's bit order.
func (a AccessFS) Names() []string {
	var out []string
	for _, n := range fsNames {
		if a&n.r != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// Groups of rights as the sandbox grants them.
const (
	// fileRights are the only rights a rule on a non-directory may carry.
	fileRights = Execute | WriteFile | ReadFile | Truncate | IoctlDev
	// readRights let a program read and run files beneath a rule.
	readRights = ReadFile | Execute
	// writeRights let a program change what is beneath a writable root.
	// MakeChar and MakeBlock are never granted: a device node created in a
	// writable root would be a door to the device, whatever Landlock says
	// about the root.
	writeRights = WriteFile | Truncate | RemoveDir | RemoveFile | MakeDir | MakeReg |
		MakeSock | MakeFifo | MakeSym | Refer
	// deviceRights are granted on the Plan's writable devices.
	deviceRights = ReadFile | WriteFile | Truncate | IoctlDev
)

// Network rights.
const (
	netBindTCP    = unix.LANDLOCK_ACCESS_NET_BIND_TCP
	netConnectTCP = unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
	// ABI 10.
	netBindUDP        = unix.LANDLOCK_ACCESS_NET_BIND_UDP
	netConnectSendUDP = unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP
)

// Scopes.
const (
	scopeAbstractUnix = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
	scopeSignal       = unix.LANDLOCK_SCOPE_SIGNAL
)

// bitName names one bit of a network right or scope mask.
type bitName struct {
	bit  uint64
	name string
}

var (
	netNames   = []bitName{{netBindTCP, "bind_tcp"}, {netConnectTCP, "connect_tcp"}, {netBindUDP, "bind_udp"}, {netConnectSendUDP, "connect_send_udp"}}
	scopeNames = []bitName{{scopeAbstractUnix, "abstract_unix_socket"}, {scopeSignal, "signal"}}
)

// NetNames lists the network rights in n (a Spec's HandledNet).
func NetNames(n uint64) []string { return namesOf(n, netNames) }

// ScopeNames lists the scopes in s (a Spec's Scoped).
func ScopeNames(s uint64) []string { return namesOf(s, scopeNames) }

func namesOf(v uint64, names []bitName) []string {
	var out []string
	for _, n := range names {
		if v&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return out
}
