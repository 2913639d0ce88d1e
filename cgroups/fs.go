package cgroups

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// The helpers here talk to cgroupfs with raw syscalls: os.File adds an fstat
// and two epoll_ctl calls per file, which is most of the cost of a cgroup
// write. Every error names the operation and the path.

func pathErr(op, path string, err error) error {
	return &fs.PathError{Op: "cgroups: " + op, Path: path, Err: err}
}

// writeFile writes data to an existing cgroup file in one write(2).
func writeFile(path, data string) error {
	fd, err := openRetry(path, unix.O_WRONLY|unix.O_CLOEXEC)
	if err != nil {
		return pathErr("write "+strconv.Quote(data)+" to", path, err)
	}
	for {
		_, err = unix.Write(fd, []byte(data))
		if err != unix.EINTR {
			break
		}
	}
	unix.Close(fd)
	if err != nil {
		return pathErr("write "+strconv.Quote(data)+" to", path, err)
	}
	return nil
}

// procSwaps is where swapOn looks.
var procSwaps = "/proc/swaps"

// swapOn reports whether the host has swap in use: /proc/swaps lists a
// device or file after its header. A kernel without swap has no such file;
// any other failure to read it counts as swap on.
func swapOn() bool {
	b, err := os.ReadFile(procSwaps)
	if errors.Is(err, fs.ErrNotExist) {
		return false
	}
	if err != nil {
		return true
	}
	return len(strings.Split(strings.TrimSpace(string(b)), "\n")) > 1
}

func openRetry(path string, flags int) (int, error) {
	for {
		fd, err := unix.Open(path, flags, 0)
		if err != unix.EINTR {
			return fd, err
		}
	}
}

// readFile reads a whole (small, pseudo-) file.
func readFile(path string) ([]byte, error) {
	fd, err := openRetry(path, unix.O_RDONLY|unix.O_CLOEXEC)
	if err != nil {
		return nil, pathErr("read", path, err)
	}
	defer unix.Close(fd)
	buf := make([]byte, 0, 2048)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := unix.Read(fd, buf[len(buf):cap(buf)])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, pathErr("read", path, err)
		}
		if n == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+n]
	}
}

// readUint reads a file holding one unsigned number; "max" reads as
// maxValue.
func readUint(path string) (uint64, error) {
	b, err := readFile(path)
	if err != nil {
		return 0, err
	}
	s := strings.TrimSpace(string(b))
	if s == "max" {
		return maxValue, nil
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, pathErr("parse", path, err)
	}
	return v, nil
}

// maxValue stands for "max" (no limit) in files that hold a number.
const maxValue = ^uint64(0)

// readKey reads a flat-keyed file ("key value" per line) and returns the
// value of key, false when the key is absent. A missing file is (0, false,
// nil).
func readKey(path, key string) (uint64, bool, error) {
	b, err := readFile(path)
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return 0, false, nil
		}
		return 0, false, err
	}
	v, ok := keyValue(string(b), key)
	return v, ok, nil
}

// keyValue finds "key value" in a flat-keyed text.
func keyValue(text, key string) (uint64, bool) {
	for len(text) > 0 {
		line := text
		if i := strings.IndexByte(text, '\n'); i >= 0 {
			line, text = text[:i], text[i+1:]
		} else {
			text = ""
		}
		k, v, ok := strings.Cut(line, " ")
		if !ok || k != key {
			continue
		}
		n, err := strconv.ParseUint(strings.TrimSpace(v), 10, 64)
		if err != nil {
			return 0, false
		}
		return n, true
	}
	return 0, false
}

// readUintIfExists is readUint that reads a missing file as 0.
func readUintIfExists(path string) (uint64, error) {
	v, err := readUint(path)
	if errors.Is(err, unix.ENOENT) {
		return 0, nil
	}
	return v, err
}

// readList reads a space-separated list (cgroup.controllers,
// cgroup.subtree_control).
func readList(path string) ([]string, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	return strings.Fields(string(b)), nil
}

// readPids reads the pids of a cgroup.procs file.
func readPids(path string) ([]int, error) {
	b, err := readFile(path)
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		p, err := strconv.Atoi(f)
		if err != nil {
			return nil, pathErr("parse", path, err)
		}
		pids = append(pids, p)
	}
	return pids, nil
}

// subdirs lists the child cgroups of dir (nil when dir is gone).
func subdirs(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
		return nil, pathErr("list", dir, unwrapPathErr(err))
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	return out, nil
}

// treePids lists the pids in dir and every cgroup below it.
func treePids(dir string) ([]int, error) {
	pids, err := readPids(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		if errors.Is(err, unix.ENOENT) {
			return nil, nil
		}
		return nil, err
	}
	subs, err := subdirs(dir)
	if err != nil {
		return pids, err
	}
	for _, s := range subs {
		p, err := treePids(s)
		if err != nil {
			return pids, err
		}
		pids = append(pids, p...)
	}
	return pids, nil
}

func unwrapPathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// mkdir creates one cgroup directory. EEXIST is returned as is so callers can
// tell a name collision.
func mkdir(path string) error {
	if err := unix.Mkdir(path, 0o755); err != nil {
		return pathErr("create", path, err)
	}
	return nil
}

// mkdirAll creates path and its missing parents below (not including) top
// and returns the directories it created, deepest first.
func mkdirAll(top, path string) ([]string, error) {
	var missing []string
	for p := path; p != top && len(p) > len(top); p = filepath.Dir(p) {
		var st unix.Stat_t
		if err := unix.Stat(p, &st); err == nil {
			break
		} else if err != unix.ENOENT {
			return nil, pathErr("stat", p, err)
		}
		missing = append(missing, p)
	}
	var made []string
	for i := len(missing) - 1; i >= 0; i-- {
		err := unix.Mkdir(missing[i], 0o755)
		if err == unix.EEXIST {
			continue
		}
		if err != nil {
			return made, pathErr("create", missing[i], err)
		}
		made = append([]string{missing[i]}, made...)
	}
	return made, nil
}

// removeTree removes the cgroup dir, its child cgroups first. A missing dir
// is success. EBUSY (a process is still inside) is reported with the pids
// found there.
func removeTree(dir string) error {
	err := unix.Rmdir(dir)
	if err == nil || err == unix.ENOENT {
		return nil
	}
	if err == unix.EBUSY || err == unix.ENOTEMPTY {
		subs, lerr := subdirs(dir)
		if lerr != nil {
			return lerr
		}
		if len(subs) > 0 {
			for _, s := range subs {
				if err := removeTree(s); err != nil {
					return err
				}
			}
			err = unix.Rmdir(dir)
			if err == nil || err == unix.ENOENT {
				return nil
			}
		}
	}
	if err == unix.EBUSY {
		return busyErr(dir)
	}
	return pathErr("remove", dir, err)
}

// BusyError says a cgroup could not be removed because processes are still
// inside: kill them (Group.Kill), wait (Group.WaitEmpty) and remove again.
type BusyError struct {
	Path string // the cgroup directory
	Pids []int  // the processes found inside when the removal failed
}

func (e *BusyError) Error() string {
	var b strings.Builder
	b.WriteString("cgroups: remove ")
	b.WriteString(e.Path)
	b.WriteString(": device or resource busy (processes still inside")
	for i, p := range e.Pids {
		if i == 8 {
			b.WriteString(" ...")
			break
		}
		b.WriteByte(' ')
		b.WriteString(strconv.Itoa(p))
	}
	b.WriteString(")")
	return b.String()
}

// Unwrap makes errors.Is(err, unix.EBUSY) hold.
func (e *BusyError) Unwrap() error { return unix.EBUSY }

func busyErr(dir string) error {
	pids, _ := treePids(dir)
	return &BusyError{Path: dir, Pids: pids}
}
