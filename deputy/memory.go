package deputy

import (
	"bytes"

	"golang.org/x/sys/unix"
)

// Read copies n bytes at addr out of thread pid's memory (nil for none).
// What it read is the caller's only if the caller is known to still wait
// afterwards (seccomp.Call.Valid): before, pid may have been reused.
func Read(pid int, addr uint64, n int) ([]byte, unix.Errno) {
	if n == 0 {
		return nil, 0
	}
	buf := make([]byte, n)
	got, err := unix.ProcessVMReadv(pid, []unix.Iovec{{Base: &buf[0], Len: uint64(n)}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: n}}, 0)
	if err != nil || got != n {
		return nil, unix.EFAULT
	}
	return buf, 0
}

// ReadString copies the NUL-terminated string at addr out of thread pid's
// memory, as the kernel copies a pathname: at most max bytes before the
// NUL (ENAMETOOLONG beyond), EFAULT where the memory ends first. It reads
// page by page, so a short string at the end of a mapping is read whole.
func ReadString(pid int, addr uint64, max int) (string, unix.Errno) {
	const page = 4096
	var out []byte
	for len(out) <= max {
		n := page - int(addr%page)
		if n > max+1-len(out) {
			n = max + 1 - len(out)
		}
		b, errno := Read(pid, addr, n)
		if errno != 0 {
			return "", errno
		}
		if i := bytes.IndexByte(b, 0); i >= 0 {
			return string(append(out, b[:i]...)), 0
		}
		out = append(out, b...)
		addr += uint64(n)
	}
	return "", unix.ENAMETOOLONG
}

// Write copies b into thread pid's memory at addr.
func Write(pid int, addr uint64, b []byte) unix.Errno {
	n, err := unix.ProcessVMWritev(pid, []unix.Iovec{{Base: &b[0], Len: uint64(len(b))}},
		[]unix.RemoteIovec{{Base: uintptr(addr), Len: len(b)}}, 0)
	if err != nil || n != len(b) {
		return unix.EFAULT
	}
	return 0
}
