package sockmed

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
	"strings"
)

// ownedAbstract reports whether the abstract name (its bytes after the
// leading NUL) is bound, in the supervisor's network namespace (the
// program's: AbstractOwned is for a shared one), by a socket that one of
// the sandbox's processes holds (owned): its own server, not a host
// daemon's; and whether it is bound at all (a name nobody bound is not
// worth a refusal: connect says ECONNREFUSED of it).
func (m *Mediator) ownedAbstract(name []byte) (owned, bound bool) {
	inodes := abstractInodes(name)
	if len(inodes) == 0 {
		return false, false
	}
	if m.cfg.Members == nil {
		return false, true
	}
	for _, pid := range m.cfg.Members() {
		dir := "/proc/" + strconv.Itoa(pid) + "/fd/"
		d, err := os.Open(dir)
		if err != nil {
			continue
		}
		names, _ := d.Readdirnames(-1)
		d.Close()
		for _, n := range names {
			l, err := os.Readlink(dir + n)
			if err != nil {
				continue
			}
			if ino, ok := strings.CutPrefix(l, "socket:["); ok && inodes[strings.TrimSuffix(ino, "]")] {
				return true, true
			}
		}
	}
	return false, true
}

// abstractInodes are the inodes of the sockets /proc/net/unix lists with
// the abstract name (a listener and the connections it accepted); the file
// shows the leading NUL, and any other, as '@'.
func abstractInodes(name []byte) map[string]bool {
	f, err := os.Open("/proc/net/unix")
	if err != nil {
		return nil
	}
	defer f.Close()
	want := "@" + string(bytes.ReplaceAll(name, []byte{0}, []byte{'@'}))
	out := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	sc.Scan() // header
	for sc.Scan() {
		inode, path, ok := unixLine(sc.Text())
		if ok && path == want {
			out[inode] = true
		}
	}
	return out
}

// unixLine splits a line of /proc/net/unix into its inode (the 7th field)
// and its path (the rest, spaces and all, after one space).
func unixLine(line string) (inode, path string, ok bool) {
	rest := line
	for i := 0; i < 7; i++ {
		rest = strings.TrimLeft(rest, " ")
		j := strings.IndexByte(rest, ' ')
		if j < 0 {
			return "", "", false
		}
		if i == 6 {
			inode = rest[:j]
		}
		rest = rest[j:]
	}
	if len(rest) < 2 {
		return "", "", false
	}
	return inode, rest[1:], true
}
