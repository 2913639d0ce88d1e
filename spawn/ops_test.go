package spawn

import (
	"net/netip"
	"testing"

	"golang.org/x/sys/unix"
)

// TestOpsReadAsTheCallsTheyMake: each constructor makes the call its name
// says, with the arguments in the C stage's slots, and Target names the path
// it changes.
func TestOpsReadAsTheCallsTheyMake(t *testing.T) {
	for _, c := range []struct {
		op     Op
		want   string
		target string
	}{
		{MakePrivate("/", "w"), `mount("", "/", "", MS_REC|MS_PRIVATE, "")`, "/"},
		{MountNew("tmpfs", "/dev", unix.MS_NOSUID|unix.MS_NODEV, "size=64k", "w"), `mount("tmpfs", "/dev", "tmpfs", MS_NOSUID|MS_NODEV, "size=64k")`, "/dev"},
		{Bind("/dev/null", "/h/.netrc", false, "w"), `mount("/dev/null", "/h/.netrc", "", MS_BIND, "")`, "/h/.netrc"},
		{Bind("/x", "/x", true, "w"), `mount("/x", "/x", "", MS_BIND|MS_REC, "")`, "/x"},
		{RemountBind("/dev", unix.MS_RDONLY, "w"), `mount("", "/dev", "", MS_RDONLY|MS_REMOUNT|MS_BIND, "")`, "/dev"},
		{SetReadOnly("/", true, "w"), `mount_setattr("/", MOUNT_ATTR_RDONLY, AT_RECURSIVE)`, "/"},
		{SetReadOnly("/a", false, "w"), `mount_setattr("/a", MOUNT_ATTR_RDONLY)`, "/a"},
		{CloneTree(2, "/ws", "w"), `open_tree(slot 2, "/ws")`, "/ws"},
		{AttachTree(2, "/ws", "w"), `move_mount(slot 2, "/ws")`, "/ws"},
		{WriteFile("/proc/self/setgroups", "deny", "w"), `write("/proc/self/setgroups", "deny")`, "/proc/self/setgroups"},
		{Chdir("/ws", "w"), `chdir("/ws")`, "/ws"},
		{LoopbackUp("w"), `ip link set lo up`, ""},
		{ListenAndHandOver(3128, "w"), `listen(127.0.0.1:3128) and send it over the proxy socket`, ""},
		{ListenOnAndHandOver(netip.MustParseAddr("127.0.0.2"), 80, 7, "w"), `listen(127.0.0.2:80) and send it over the proxy socket`, ""},
		{Mkdir("/dev/pts", 0o755, "w"), `mkdir("/dev/pts", 0755)`, "/dev/pts"},
		{CreateFile("/dev/null", 0o666, "w"), `create("/dev/null", 0666)`, "/dev/null"},
		{Symlink("/proc/self/fd", "/dev/fd", "w"), `symlink("/proc/self/fd", "/dev/fd")`, "/dev/fd"},
		{LandlockRule("/tmp/x", 0x3, "w"), `landlock_add_rule("/tmp/x", 0x3)`, "/tmp/x"},
	} {
		if got := c.op.String(); got != c.want {
			t.Errorf("%s, want %s", got, c.want)
		}
		if got := c.op.Target(); got != c.target {
			t.Errorf("%s: target %q, want %q", c.want, got, c.target)
		}
		if c.op.Why() != "w" {
			t.Errorf("%s: why %q", c.want, c.op.Why())
		}
	}
	// The wire slots the C stage reads: the subtree flag of mount_setattr
	// travels in the slot field, the listener's port in the number.
	if o := SetReadOnly("/", true, ""); o.kind != OpSetAttr || o.slot != 1 || o.num != unix.MOUNT_ATTR_RDONLY {
		t.Errorf("SetReadOnly on the wire: %+v", o)
	}
	if o := ListenAndHandOver(3128, ""); o.kind != OpListenSend || o.num != 3128 || o.addr != netip.AddrFrom4([4]byte{127, 0, 0, 1}) || o.backlog != 512 {
		t.Errorf("ListenAndHandOver on the wire: %+v", o)
	}
}
