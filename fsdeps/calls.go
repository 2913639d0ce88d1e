package fsdeps

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Info is what a recorded Lstat or Stat says of a file: its type and
// permission bits, device, inode, owner and rdev. It has no size and no
// times: the check does not cover them.
type Info struct {
	mode     uint32
	uid, gid uint32
	dev, ino uint64
	rdev     uint64
}

func infoOf(st *unix.Stat_t) Info {
	return Info{mode: st.Mode, uid: st.Uid, gid: st.Gid, dev: st.Dev, ino: st.Ino, rdev: st.Rdev}
}

// RawMode is st_mode: the type (S_IFMT) and the permission bits.
func (i Info) RawMode() uint32 { return i.mode }

// Mode is st_mode as an fs.FileMode, as os.Lstat gives it.
func (i Info) Mode() fs.FileMode {
	m := fs.FileMode(i.mode & 0o777)
	switch i.mode & unix.S_IFMT {
	case unix.S_IFBLK:
		m |= fs.ModeDevice
	case unix.S_IFCHR:
		m |= fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFDIR:
		m |= fs.ModeDir
	case unix.S_IFIFO:
		m |= fs.ModeNamedPipe
	case unix.S_IFLNK:
		m |= fs.ModeSymlink
	case unix.S_IFSOCK:
		m |= fs.ModeSocket
	}
	if i.mode&unix.S_ISGID != 0 {
		m |= fs.ModeSetgid
	}
	if i.mode&unix.S_ISUID != 0 {
		m |= fs.ModeSetuid
	}
	if i.mode&unix.S_ISVTX != 0 {
		m |= fs.ModeSticky
	}
	return m
}

// IsDir reports whether the file is a directory.
func (i Info) IsDir() bool { return i.mode&unix.S_IFMT == unix.S_IFDIR }

// IsRegular reports whether the file is a regular file.
func (i Info) IsRegular() bool { return i.mode&unix.S_IFMT == unix.S_IFREG }

// IsSymlink reports whether the file is a symbolic link (only Lstat sees
// one).
func (i Info) IsSymlink() bool { return i.mode&unix.S_IFMT == unix.S_IFLNK }

// IsCharDevice reports whether the file is a character device.
func (i Info) IsCharDevice() bool { return i.mode&unix.S_IFMT == unix.S_IFCHR }

// Dev is the device the file is on.
func (i Info) Dev() uint64 { return i.dev }

// Ino is the file's inode number.
func (i Info) Ino() uint64 { return i.ino }

// UID is the file's owner.
func (i Info) UID() uint32 { return i.uid }

// SameFile reports whether i and j are the same file (device and inode).
func (i Info) SameFile(j Info) bool { return i.dev == j.dev && i.ino == j.ino }

// CtimeInfo is Info with the file's ctime (LstatCtime), which its check
// compares too.
type CtimeInfo struct {
	Info
	Ctime Timespec
}

// errnoOf is the errno inside err (0 when it is not one).
func errnoOf(err error) unix.Errno {
	var e unix.Errno
	if errors.As(err, &e) {
		return e
	}
	return 0
}

// canRecord says whether a call on path can be recorded at all; it taints
// the decision when not.
func canRecord(op, path string) bool {
	switch {
	case strings.IndexByte(path, 0) >= 0:
		Taint("fsdeps: " + op + " of a path with a NUL byte")
		return false
	case len(path) > MaxPath:
		Taint("fsdeps: " + op + " of a path longer than " + itoa(MaxPath) + " bytes")
		return false
	case processSpecific(path):
		Taint("fsdeps: " + op + " of " + path + ", a file of this process's own, which the recipe cannot check")
		return false
	}
	return true
}

// processSpecific reports whether the absolute path names a file of this
// process's own in /proc (its own directory, a thread's, or a link into
// them), whose content no other process can check. /proc/self/mountinfo is
// not one here: its content is the mount namespace's, the same for every
// process in it (and the namespace is in the recipe's key).
func processSpecific(path string) bool {
	if !strings.HasPrefix(path, "/") {
		return false
	}
	p := filepath.Clean(path)
	if p == "/proc/self/mountinfo" {
		return false
	}
	rest, ok := strings.CutPrefix(p, "/proc/")
	if !ok {
		return false
	}
	first, _, _ := strings.Cut(rest, "/")
	switch first {
	case "self", "thread-self", "mounts", "net":
		return true
	}
	return first != "" && strings.Trim(first, "0123456789") == ""
}

// kernelFS are the filesystems whose files' metadata says nothing of their
// content: their files are recorded by content.
var kernelFS = map[int64]bool{
	unix.PROC_SUPER_MAGIC: true, unix.SYSFS_MAGIC: true, unix.CGROUP_SUPER_MAGIC: true, unix.CGROUP2_SUPER_MAGIC: true,
	unix.DEBUGFS_MAGIC: true, unix.TRACEFS_MAGIC: true, unix.SECURITYFS_MAGIC: true, unix.BPF_FS_MAGIC: true,
	configfsMagic: true, unix.EFIVARFS_MAGIC: true,
}

// configfsMagic is configfs's f_type (x/sys/unix has no name for it).
const configfsMagic = 0x62656570

// byContent says whether a file opened at path (fd) is recorded by its
// content: under /proc or /sys, or on a kernel filesystem.
func byContent(path string, fd int) bool {
	p := filepath.Clean(path)
	if strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/") {
		return true
	}
	var s unix.Statfs_t
	if fd >= 0 && unix.Fstatfs(fd, &s) == nil {
		return kernelFS[int64(s.Type)]
	}
	return false
}

// byPrefix is byContent before the file is open: the kind an open's error
// is recorded as (both are checked the same way).
func byPrefix(path string) Kind {
	p := filepath.Clean(path)
	if strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/") {
		return KindFileContent
	}
	return KindFileMeta
}

// untrustedTimes are the filesystems whose file times a check cannot go
// by: a userspace or network filesystem may keep a directory's mtime as it
// was while its entries change (FUSE, 9p, vboxsf, SMB), or answer a stat
// from a client cache (NFS, CIFS, Ceph, AFS, Coda). Listings and file reads
// there taint the decision; a stat's answer (mode, owner, inode) is what a
// fresh decision would see too.
var untrustedTimes = map[int64]string{
	unix.FUSE_SUPER_MAGIC: "fuse", unix.V9FS_MAGIC: "9p", 0x786f4256: "vboxsf", unix.CIFS_SUPER_MAGIC: "cifs",
	unix.SMB_SUPER_MAGIC: "smb", 0xfe534d42: "smb2", unix.NFS_SUPER_MAGIC: "nfs", unix.CEPH_SUPER_MAGIC: "ceph",
	unix.AFS_FS_MAGIC: "afs", unix.CODA_SUPER_MAGIC: "coda",
}

// timesUntrusted taints the decision when the open file fd is on a
// filesystem whose times a check cannot go by, and says so: one of
// untrustedTimes, or a kernel filesystem (a directory of /proc, sysfs or
// cgroupfs keeps its mtime while its entries come and go).
func timesUntrusted(op, path string, fd int) bool {
	var s unix.Statfs_t
	if err := unix.Fstatfs(fd, &s); err != nil {
		Taint("fsdeps: " + op + " " + path + ": fstatfs: " + err.Error())
		return true
	}
	name, ok := untrustedTimes[int64(s.Type)]
	if kernelFS[int64(s.Type)] {
		name, ok = "a kernel filesystem", true
	}
	if ok {
		Taint("fsdeps: " + op + " " + path + ": on " + name + ", whose file times a check cannot go by")
	}
	return ok
}

// racyWindow is how recent a recorded time may be before the record is
// refused: file times come from a coarse clock (one tick behind at most),
// so a change made in the same tick as the one the decision saw could
// leave the same time behind, which the check would not see.
var racyWindow = sync.OnceValue(func() time.Duration {
	var res unix.Timespec
	d := 10 * time.Millisecond
	if unix.ClockGetres(unix.CLOCK_REALTIME_COARSE, &res) == nil {
		if r := 2*time.Duration(res.Nano()) + time.Millisecond; r > d {
			d = r
		}
	}
	return d
})

// now is the time to compare file times with, taken before a call.
func now() time.Time { return time.Now() }

// racy taints the decision when one of the times is not clearly older than
// before (when the call was made), and says so. A time of a whole second
// may come from a filesystem that keeps whole seconds (or two: FAT): the
// window is then that long.
func racy(op, path string, before time.Time, ts ...Timespec) bool {
	for _, t := range ts {
		window, why := racyWindow(), ""
		if t.Nsec == 0 {
			window += 2 * time.Second
			why = ", a whole-second time (as from a filesystem that keeps only seconds)"
		}
		if !time.Unix(t.Sec, t.Nsec).Before(before.Add(-window)) {
			Taint("fsdeps: " + op + " of " + path + ": changed within " + window.String() + " of the decision" + why + " (a later change could keep the same time)")
			return true
		}
	}
	return false
}

func retryEINTR(f func() error) error {
	for {
		if err := f(); err != unix.EINTR {
			return err
		}
	}
}

// Lstat is os.Lstat, recorded: the errno, or the Info.
func Lstat(path string) (Info, error) {
	var st unix.Stat_t
	err := retryEINTR(func() error { return unix.Lstat(path, &st) })
	return statDep(KindLstat, "lstat", path, &st, err)
}

// Stat is os.Stat, recorded: the errno, or the Info.
func Stat(path string) (Info, error) {
	var st unix.Stat_t
	err := retryEINTR(func() error { return unix.Stat(path, &st) })
	return statDep(KindStat, "stat", path, &st, err)
}

func statDep(k Kind, op, path string, st *unix.Stat_t, err error) (Info, error) {
	if canRecord(op, path) {
		d := Dep{Kind: k, Path: path, Errno: errnoOf(err)}
		if err == nil {
			d.Mode, d.UID, d.GID, d.Dev, d.Ino, d.Rdev = st.Mode, st.Uid, st.Gid, st.Dev, st.Ino, st.Rdev
		}
		record(d)
	}
	if err != nil {
		return Info{}, &fs.PathError{Op: op, Path: path, Err: err}
	}
	return infoOf(st), nil
}

// LstatCtime is Lstat with the ctime, which the check compares too (any
// change of the inode's content or metadata changes it).
func LstatCtime(path string) (CtimeInfo, error) {
	before := now()
	var st unix.Stat_t
	err := retryEINTR(func() error { return unix.Lstat(path, &st) })
	if canRecord("lstat", path) {
		d := Dep{Kind: KindLstat, Flags: FlagCtime, Path: path, Errno: errnoOf(err)}
		if err == nil {
			d.Mode, d.UID, d.GID, d.Dev, d.Ino, d.Rdev = st.Mode, st.Uid, st.Gid, st.Dev, st.Ino, st.Rdev
			d.Ctime = timespec(st.Ctim)
		}
		if err != nil || !racy("lstat", path, before, d.Ctime) {
			record(d)
		}
	}
	if err != nil {
		return CtimeInfo{}, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return CtimeInfo{Info: infoOf(&st), Ctime: timespec(st.Ctim)}, nil
}

// Readlink is os.Readlink, recorded: the errno, or the target.
func Readlink(path string) (string, error) {
	target, err := os.Readlink(path)
	if !canRecord("readlink", path) {
		return target, err
	}
	switch errno := errnoOf(err); {
	case err != nil && errno == 0:
		Taint("fsdeps: readlink " + path + ": " + err.Error())
	case err != nil:
		record(Dep{Kind: KindReadlink, Path: path, Errno: errno})
	case len(target) == 0 || len(target) > MaxPath:
		Taint("fsdeps: readlink " + path + ": a target of " + itoa(len(target)) + " bytes")
	default:
		record(Dep{Kind: KindReadlink, Path: path, Data: target})
	}
	return target, err
}

// Statfs is statfs(2), recorded: the errno, or the filesystem's type
// (f_type), which is all it returns.
func Statfs(path string) (int64, error) {
	var s unix.Statfs_t
	err := retryEINTR(func() error { return unix.Statfs(path, &s) })
	if canRecord("statfs", path) {
		d := Dep{Kind: KindStatfs, Path: path, Errno: errnoOf(err)}
		if err == nil {
			d.FsType = int64(s.Type)
		}
		record(d)
	}
	if err != nil {
		return 0, &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	return int64(s.Type), nil
}

// DirEntry is one entry of a ReadDir: its name and type (the type bits of
// fs.FileMode), which the directory's mtime covers.
type DirEntry struct {
	name string
	typ  fs.FileMode
}

// Name is the entry's name.
func (e DirEntry) Name() string { return e.name }

// Type is the entry's type bits (fs.ModeDir, fs.ModeSymlink, ...; 0 for a
// regular file).
func (e DirEntry) Type() fs.FileMode { return e.typ }

// ReadDir is os.ReadDir, recorded: the errno of opening the directory
// (O_DIRECTORY: a file that is not one fails with ENOTDIR, and a FIFO never
// blocks), or its device, inode and mtime, taken before it is listed (an
// entry made, removed or renamed later changes the mtime). Entries are
// sorted by name. A directory of a kernel, userspace or network
// filesystem (/proc, sysfs, cgroupfs, FUSE, NFS ...) is listed but taints
// the decision: its mtime need not follow its entries (timesUntrusted).
func ReadDir(path string) ([]DirEntry, error) {
	before := now()
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		if canRecord("readdir", path) {
			record(Dep{Kind: KindReadDir, Path: path, Errno: errnoOf(err)})
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	var st unix.Stat_t
	serr := retryEINTR(func() error { return unix.Fstat(fd, &st) })
	ents, rerr := f.ReadDir(-1)
	out := make([]DirEntry, len(ents))
	for i, e := range ents {
		out[i] = DirEntry{name: e.Name(), typ: e.Type()}
	}
	slices.SortFunc(out, func(a, b DirEntry) int { return strings.Compare(a.name, b.name) })
	if !canRecord("readdir", path) {
		return out, rerr
	}
	switch {
	case serr != nil:
		Taint("fsdeps: readdir " + path + ": fstat: " + serr.Error())
	case rerr != nil:
		Taint("fsdeps: readdir " + path + ": " + rerr.Error())
	case timesUntrusted("readdir", path, fd):
	default:
		d := Dep{Kind: KindReadDir, Path: path, Dev: st.Dev, Ino: st.Ino, Mtime: timespec(st.Mtim)}
		if !racy("readdir", path, before, d.Mtime) {
			record(d)
		}
	}
	return out, rerr
}

// ReadFile is os.ReadFile, recorded (see readFile).
func ReadFile(path string) ([]byte, error) { return readFile(path, -1, 0) }

// ReadFileAtMost is ReadFile that reads at most max+1 bytes, so that the
// caller can tell a file larger than max without reading all of it.
func ReadFileAtMost(path string, max int) ([]byte, error) { return readFile(path, max, 0) }

// NoFollowFile is what ReadNoFollow found.
type NoFollowFile struct {
	// Info is the open file's fstat.
	Info Info
	// Size and Data are a regular file's size and content (at most the
	// bound plus one byte); Data is nil for any other file.
	Size int64
	Data []byte
}

// ReadNoFollow reads path as the decision's careful readers do: the last
// component not followed (a symbolic link there fails with ELOOP), and
// only a regular file opened for reading. The path is opened O_PATH first
// and looked at: opening a FIFO or a device has effects of its own (a
// writer waiting on a FIFO goes on, a driver runs), and what a program
// may write names such files (a git include). A regular file is then
// opened through that descriptor (its /proc/self/fd link, so it is the file
// looked at) and read, at most max+1 bytes (max < 0: all of it). Recorded:
// the open's errno, as an open for reading would give it; for a file that
// is not regular, its Info (checked as an lstat); for a regular one, as
// ReadFile's (with the last component not followed).
func ReadNoFollow(path string, max int) (NoFollowFile, error) {
	var out NoFollowFile
	before := now()
	failed := func(err error) (NoFollowFile, error) {
		if canRecord("open", path) {
			record(Dep{Kind: byPrefix(path), Flags: FlagNoFollow, Path: path, Errno: errnoOf(err)})
		}
		return out, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	var pfd int
	err := retryEINTR(func() (err error) {
		pfd, err = unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return failed(err)
	}
	defer unix.Close(pfd)
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Fstat(pfd, &st) }); err != nil {
		Taint("fsdeps: fstat " + path + ": " + err.Error())
		return out, &fs.PathError{Op: "stat", Path: path, Err: err}
	}
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return failed(unix.ELOOP) // what an open with O_NOFOLLOW says
	case unix.S_IFREG:
	default:
		// Looked at without following: the same answer as lstat's.
		out.Info = infoOf(&st)
		statDep(KindLstat, "open", path, &st, nil)
		return out, nil
	}
	var fd int
	err = retryEINTR(func() (err error) {
		fd, err = unix.Open("/proc/self/fd/"+itoa(pfd), unix.O_RDONLY|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
		return err
	})
	if err == unix.ENOENT {
		Taint("fsdeps: reopen " + path + " through /proc/self/fd: " + err.Error())
		return out, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	if err != nil {
		return failed(err) // no right to read it
	}
	defer unix.Close(fd)
	out.Info = infoOf(&st)
	out.Size = st.Size
	data, rerr := readAll(fd, max, st.Size)
	if rerr != nil {
		Taint("fsdeps: read " + path + ": " + rerr.Error())
		return out, &fs.PathError{Op: "read", Path: path, Err: rerr}
	}
	out.Data = data
	recordRead(path, fd, FlagNoFollow, &st, data, max, before)
	return out, nil
}

// readFile reads path as os.ReadFile does (open O_RDONLY, which may block
// on a FIFO as os.ReadFile's does), at most max+1 bytes when max >= 0, and
// records it:
//   - the open's errno when it fails;
//   - a regular file of a real filesystem: its dev, ino, size, mtime and
//     ctime (KindFileMeta), taken before it is read;
//   - a file under /proc or /sys, or of another kernel filesystem: its
//     content (KindFileContent); one read only in part (max) taints;
//   - anything else (a pipe, a device), or a file of this process's own in
//     /proc: nothing can check it, the decision is tainted.
func readFile(path string, max int, flags uint8) ([]byte, error) {
	before := now()
	var fd int
	err := retryEINTR(func() (err error) {
		fd, err = unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		return err
	})
	if err != nil {
		if canRecord("open", path) {
			record(Dep{Kind: byPrefix(path), Flags: flags, Path: path, Errno: errnoOf(err)})
		}
		return nil, &fs.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	serr := retryEINTR(func() error { return unix.Fstat(fd, &st) })
	data, rerr := readAll(fd, max, st.Size)
	switch {
	case rerr != nil:
		Taint("fsdeps: read " + path + ": " + rerr.Error())
		return data, &fs.PathError{Op: "read", Path: path, Err: rerr}
	case serr != nil:
		Taint("fsdeps: fstat " + path + ": " + serr.Error())
	default:
		recordRead(path, fd, flags, &st, data, max, before)
	}
	return data, nil
}

// recordRead records a file read whole (or up to max+1 bytes).
func recordRead(path string, fd int, flags uint8, st *unix.Stat_t, data []byte, max int, before time.Time) {
	if !canRecord("read", path) {
		return
	}
	switch {
	case byContent(path, fd):
		if max >= 0 && len(data) > max {
			Taint("fsdeps: read " + path + ": read in part only, so its content cannot be checked")
			return
		}
		if len(data) > MaxData {
			Taint("fsdeps: read " + path + ": larger than " + itoa(MaxData) + " bytes")
			return
		}
		record(Dep{Kind: KindFileContent, Flags: flags, Path: path, Data: string(data)})
	case st.Mode&unix.S_IFMT == unix.S_IFREG:
		if timesUntrusted("read", path, fd) {
			return
		}
		d := Dep{Kind: KindFileMeta, Flags: flags, Path: path, Dev: st.Dev, Ino: st.Ino, Size: st.Size,
			Mtime: timespec(st.Mtim), Ctime: timespec(st.Ctim)}
		if !racy("read", path, before, d.Mtime, d.Ctime) {
			record(d)
		}
	default:
		Taint("fsdeps: read " + path + ": not a regular file (" + infoOf(st).Mode().String() + "), whose content nothing can check")
	}
}

// readAll reads fd to its end, or max+1 bytes when max >= 0; size is a
// hint (a kernel file's is 0 or a page).
func readAll(fd, max int, size int64) ([]byte, error) {
	n := 512
	if size > 0 && size < 1<<24 {
		n = int(size) + 1
	}
	if max >= 0 && n > max+1 {
		n = max + 1
	}
	buf := make([]byte, 0, n)
	for {
		if max >= 0 && len(buf) > max {
			return buf, nil
		}
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		end := cap(buf)
		if max >= 0 && end > max+1 {
			end = max + 1
		}
		var k int
		err := retryEINTR(func() (err error) {
			k, err = unix.Read(fd, buf[len(buf):end])
			return err
		})
		if err != nil {
			return buf, err
		}
		if k == 0 {
			return buf, nil
		}
		buf = buf[:len(buf)+k]
	}
}

// EvalSymlinks is filepath.EvalSymlinks made of recorded Lstat and
// Readlink calls, one per component (the same answers, the same errors).
func EvalSymlinks(path string) (string, error) {
	// path/filepath's walkSymlinks, for Unix.
	volLen := 0
	if len(path) > 0 && path[0] == '/' {
		volLen = 1
	}
	vol := path[:volLen]
	dest := vol
	linksWalked := 0
	for start, end := volLen, volLen; start < len(path); start = end {
		for start < len(path) && path[start] == '/' {
			start++
		}
		end = start
		for end < len(path) && path[end] != '/' {
			end++
		}
		if end == start {
			break
		} else if path[start:end] == "." {
			continue
		} else if path[start:end] == ".." {
			var r int
			for r = len(dest) - 1; r >= volLen; r-- {
				if dest[r] == '/' {
					break
				}
			}
			if r < volLen || dest[r+1:] == ".." {
				if len(dest) > volLen {
					dest += "/"
				}
				dest += ".."
			} else {
				dest = dest[:r]
			}
			continue
		}
		if len(dest) > 0 && dest[len(dest)-1] != '/' {
			dest += "/"
		}
		dest += path[start:end]
		fi, err := Lstat(dest)
		if err != nil {
			return "", err
		}
		if !fi.IsSymlink() {
			if !fi.IsDir() && end < len(path) {
				return "", syscall.ENOTDIR
			}
			continue
		}
		linksWalked++
		if linksWalked > 255 {
			return "", errors.New("EvalSymlinks: too many links")
		}
		link, err := Readlink(dest)
		if err != nil {
			return "", err
		}
		path = link + path[end:]
		if len(link) > 0 && link[0] == '/' {
			dest = link[:1]
			end = 1
			vol = link[:1]
			volLen = 1
		} else {
			var r int
			for r = len(dest) - 1; r >= volLen; r-- {
				if dest[r] == '/' {
					break
				}
			}
			if r < volLen {
				dest = vol
			} else {
				dest = dest[:r]
			}
			end = 0
		}
	}
	return filepath.Clean(dest), nil
}

// Getwd is os.Getwd, with what it reads recorded: where $PWD is absolute,
// os.Getwd returns it when it names the working directory (a stat of "."
// and of $PWD); otherwise the kernel's getcwd (the recipe's key has the
// working directory).
func Getwd() (string, error) {
	if dir := os.Getenv("PWD"); len(dir) > 0 && dir[0] == '/' {
		dot, err := Stat(".")
		if err != nil {
			return "", err
		}
		if d, err := Stat(dir); err == nil && d.SameFile(dot) {
			return dir, nil
		}
	}
	return os.Getwd()
}

// ReadProcSelf reads a file of this process's own in /proc (/proc/self/...
// or /proc/thread-self/...) WITHOUT recording it: no other process can
// check what it says of this one. It is allowed only for facts the
// recipe's key covers (credentials and capabilities in /proc/self/status,
// NoNewPrivs, the seccomp mode, /proc/self/cgroup, the namespaces), and why
// says which (ProcSelfReads lists them). Any other path is refused.
func ReadProcSelf(path, why string) ([]byte, error) {
	if err := procSelfOnly(path); err != nil {
		return nil, err
	}
	noteProcSelf(path, why)
	return os.ReadFile(path)
}

// ReadlinkProcSelf is ReadProcSelf for a link of this process's own
// (/proc/self/fd/N, /proc/self/ns/...): not recorded, allowed only for
// facts the recipe's key covers (the stdio descriptors, the namespaces).
func ReadlinkProcSelf(path, why string) (string, error) {
	if err := procSelfOnly(path); err != nil {
		return "", err
	}
	noteProcSelf(path, why)
	return os.Readlink(path)
}

func procSelfOnly(path string) error {
	p := filepath.Clean(path)
	if (strings.HasPrefix(p, "/proc/self/") || strings.HasPrefix(p, "/proc/thread-self/")) && p == path {
		return nil
	}
	return &fs.PathError{Op: "fsdeps: read of this process's own", Path: path, Err: errors.New("not a clean path in /proc/self or /proc/thread-self")}
}
