package auditlog

import (
	"encoding/binary"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

// setEnabled turns the kernel's audit on or off (AUDIT_SET).
func setEnabled(t *testing.T, on uint32) {
	t.Helper()
	body := make([]byte, 44)                   // struct audit_status, as far as the kernel reads it
	binary.NativeEndian.PutUint32(body[0:], 1) // AUDIT_STATUS_ENABLED
	binary.NativeEndian.PutUint32(body[4:], on)
	fd, err := request("audit set", 1001, body)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 1<<12)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		t.Fatal(err)
	}
	msgs, err := splitMessages(buf[:n])
	if err != nil || len(msgs) == 0 || msgs[0].typ != unix.NLMSG_ERROR || ackError(msgs[0]) != nil {
		t.Fatalf("audit set %d: %v %+v", on, err, msgs)
	}
}

// TestFinishReadsUpToItsMark: Finish has the kernel log a mark after
// everything it queued, and stops reading only once the mark was read:
// a record still between the kernel's queue and the socket is read, not
// lost (as a run's last denial once was, on a busy machine).
func TestFinishReadsUpToItsMark(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "the audit log is root's to read and to write")
	}
	st, err := QueryStatus()
	if err != nil {
		t.Fatal(err)
	}
	if st.Enabled == 0 {
		setEnabled(t, 1)
		t.Cleanup(func() { setEnabled(t, 0) })
	}
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.NETLINK_AUDIT)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK, Groups: 1}); err != nil { // AUDIT_NLGRP_READLOG
		unix.Close(fd)
		t.Fatal(err)
	}
	r := Start(fd, 0, "", nil)
	r.Finish(10 * time.Second)
	if r.mark == nil || !r.marked {
		t.Errorf("Finish stopped without reading its mark (%q)", r.mark)
	}
}
