package spawn

import (
	"syscall"
	"testing"
)

// TestJudgeSharedTmp: the shared temp mount point is used only when no one
// but its user (and root) can have made or moved it.
func TestJudgeSharedTmp(t *testing.T) {
	const uid = 1000
	dir := func(owner, perm uint32) FileFacts { return FileFacts{UID: owner, Mode: syscall.S_IFDIR | perm} }
	for _, c := range []struct {
		name         string
		parent, self FileFacts
		missing      bool
		want         TmpVerdict
	}{
		{"fit", dir(0, 0o1777), dir(uid, 0o700), false, TmpFit},
		{"missing, may be made", dir(0, 0o1777), FileFacts{Err: syscall.ENOENT}, true, TmpFit},
		{"missing at the run", dir(0, 0o1777), FileFacts{Err: syscall.ENOENT}, false, TmpUnread},
		{"parent unreadable", FileFacts{Err: syscall.EACCES}, FileFacts{}, true, TmpParentUnread},
		{"parent of another user", dir(1001, 0o755), dir(uid, 0o700), false, TmpParentUnfit},
		{"parent writable by others, not sticky", dir(0, 0o777), dir(uid, 0o700), false, TmpParentUnfit},
		{"parent the user's", dir(uid, 0o755), dir(uid, 0o700), false, TmpFit},
		{"another user's", dir(0, 0o1777), dir(1001, 0o700), false, TmpUnfit},
		{"open to others", dir(0, 0o1777), dir(uid, 0o755), false, TmpUnfit},
		{"a link", dir(0, 0o1777), FileFacts{UID: uid, Mode: syscall.S_IFLNK | 0o777}, false, TmpUnfit},
		{"a file", dir(0, 0o1777), FileFacts{UID: uid, Mode: syscall.S_IFREG | 0o700}, false, TmpUnfit},
	} {
		if got := JudgeSharedTmp(c.parent, c.self, uid, c.missing); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}
