package spawn

import (
	"encoding/binary"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"sandbox-executable/fsdeps"
)

// settle waits until what a test just made is older than fsdeps' racy
// window (a file changed within it is not recorded).
func settle() { time.Sleep(60 * time.Millisecond) }

// recorded runs record with a fresh record and returns its encoding.
func recorded(t *testing.T, record func()) []byte {
	t.Helper()
	b, tt := recordedOrTainted(t, record)
	if len(tt) > 0 {
		t.Fatalf("tainted: %v", tt)
	}
	return b
}

// recordedOrTainted runs record with a fresh record and returns its
// encoding, or, when the record is tainted, the taints.
func recordedOrTainted(t *testing.T, record func()) ([]byte, []string) {
	t.Helper()
	fsdeps.Reset()
	t.Cleanup(fsdeps.Reset)
	record()
	if tt := fsdeps.Tainted(); len(tt) > 0 {
		return nil, tt
	}
	b, err := fsdeps.Encode(fsdeps.Deps())
	if err != nil {
		t.Fatal(err)
	}
	return b, nil
}

// settledRecord makes what setup makes in a fresh directory, lets it
// settle, and records what record reads there; it returns the directory
// and the encoding. A record whose only taints are whole-second times is
// made again in a new directory (three tries in all): a guest kernel whose
// coarse clock steps in whole ticks from a whole-second boot time stamps
// about one file in HZ with .000000000, which fsdeps rightly cannot tell
// from a filesystem that keeps only seconds.
func settledRecord(t *testing.T, setup, record func(d string)) (string, []byte) {
	t.Helper()
	for try := 1; ; try++ {
		d := t.TempDir()
		if setup != nil {
			setup(d)
		}
		settle()
		b, tt := recordedOrTainted(t, func() { record(d) })
		if len(tt) == 0 {
			return d, b
		}
		if try == 3 || !wholeSecondOnly(tt) {
			t.Fatalf("tainted (try %d): %v", try, tt)
		}
		t.Logf("a whole-second time, made again: %v", tt)
	}
}

// wholeSecondOnly reports whether every taint is one of a whole-second
// time.
func wholeSecondOnly(tt []string) bool {
	for _, s := range tt {
		if !strings.Contains(s, "a whole-second time") {
			return false
		}
	}
	return len(tt) > 0
}

func mustHold(t *testing.T, b []byte) {
	t.Helper()
	if ok, i, why := CheckDeps(b); !ok {
		t.Fatalf("dependencies do not hold: record %d: %v", i, why)
	}
}

func mustFail(t *testing.T, b []byte, what string) {
	t.Helper()
	if ok, _, _ := CheckDeps(b); ok {
		t.Fatalf("dependencies still hold after %s", what)
	}
}

func write(t *testing.T, p, s string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(s), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDepsEachKind records each kind of call, checks that the record holds
// right after, and that each change the check must see makes it fail.
func TestDepsEachKind(t *testing.T) {
	cases := []struct {
		name   string
		setup  func(d string)
		record func(d string)
		change func(d string)
	}{
		{"lstat missing, then created", nil,
			func(d string) { fsdeps.Lstat(d + "/x") },
			func(d string) { write(t, d+"/x", "") }},
		{"lstat file, then removed", func(d string) { write(t, d+"/x", "") },
			func(d string) { fsdeps.Lstat(d + "/x") },
			func(d string) { os.Remove(d + "/x") }},
		{"lstat dir, then chmod", func(d string) { os.Mkdir(d+"/x", 0o755) },
			func(d string) { fsdeps.Lstat(d + "/x") },
			func(d string) { os.Chmod(d+"/x", 0o775) }},
		{"lstat dir, then sticky", func(d string) { os.Mkdir(d+"/x", 0o755) },
			func(d string) { fsdeps.Lstat(d + "/x") },
			func(d string) { os.Chmod(d+"/x", 0o755|os.ModeSticky) }},
		{"lstat file, then chown", func(d string) { write(t, d+"/x", "") },
			func(d string) { fsdeps.Lstat(d + "/x") },
			func(d string) { os.Chown(d+"/x", 1, 1) }},
		{"lstat file, then replaced", func(d string) { write(t, d+"/x", "") },
			func(d string) { fsdeps.Lstat(d + "/x") },
			func(d string) { write(t, d+"/y", ""); os.Rename(d+"/y", d+"/x") }},
		{"lstat ctime, then touched", func(d string) { os.Mkdir(d+"/x", 0o700) },
			func(d string) { fsdeps.LstatCtime(d + "/x") },
			func(d string) { os.Chmod(d+"/x", 0o700) }},
		{"stat through a link, then retargeted", func(d string) {
			os.Mkdir(d+"/a", 0o755)
			os.Mkdir(d+"/b", 0o755)
			os.Symlink("a", d+"/l")
		},
			func(d string) { fsdeps.Stat(d + "/l") },
			func(d string) { os.Remove(d + "/l"); os.Symlink("b", d+"/l") }},
		{"readlink, then retargeted", func(d string) { os.Symlink("a", d+"/l") },
			func(d string) { fsdeps.Readlink(d + "/l") },
			func(d string) { os.Remove(d + "/l"); os.Symlink("ab", d+"/l") }},
		{"readlink of a file, then a link", func(d string) { write(t, d+"/l", "") },
			func(d string) { fsdeps.Readlink(d + "/l") },
			func(d string) { os.Remove(d + "/l"); os.Symlink("x", d+"/l") }},
		{"readdir, then an entry made", func(d string) { os.Mkdir(d+"/x", 0o755) },
			func(d string) { fsdeps.ReadDir(d + "/x") },
			func(d string) { write(t, d+"/x/new", "") }},
		{"readdir, then an entry renamed", func(d string) { os.Mkdir(d+"/x", 0o755); write(t, d+"/x/a", "") },
			func(d string) { fsdeps.ReadDir(d + "/x") },
			func(d string) { os.Rename(d+"/x/a", d+"/x/b") }},
		{"readdir, then an entry removed", func(d string) { os.Mkdir(d+"/x", 0o755); write(t, d+"/x/a", "") },
			func(d string) { fsdeps.ReadDir(d + "/x") },
			func(d string) { os.Remove(d + "/x/a") }},
		{"readdir missing, then made", nil,
			func(d string) { fsdeps.ReadDir(d + "/x") },
			func(d string) { os.Mkdir(d+"/x", 0o755) }},
		{"readdir of a file, then a directory", func(d string) { write(t, d+"/x", "") },
			func(d string) { fsdeps.ReadDir(d + "/x") },
			func(d string) { os.Remove(d + "/x"); os.Mkdir(d+"/x", 0o755) }},
		{"read file, then rewritten same size", func(d string) { write(t, d+"/f", "abc") },
			func(d string) { fsdeps.ReadFile(d + "/f") },
			func(d string) { time.Sleep(20 * time.Millisecond); write(t, d+"/f", "xyz") }},
		{"read file, then chmod", func(d string) { write(t, d+"/f", "abc") },
			func(d string) { fsdeps.ReadFile(d + "/f") },
			func(d string) { os.Chmod(d+"/f", 0o600) }},
		{"read missing, then made", nil,
			func(d string) { fsdeps.ReadFile(d + "/f") },
			func(d string) { write(t, d+"/f", "") }},
		{"read no-follow, then a link", func(d string) { write(t, d+"/f", "abc"); write(t, d+"/g", "abc") },
			func(d string) { fsdeps.ReadNoFollow(d+"/f", 100) },
			func(d string) { os.Remove(d + "/f"); os.Symlink("g", d+"/f") }},
		{"read no-follow of a link, then a file", func(d string) { write(t, d+"/g", "abc"); os.Symlink("g", d+"/f") },
			func(d string) { fsdeps.ReadNoFollow(d+"/f", 100) },
			func(d string) { os.Remove(d + "/f"); write(t, d+"/f", "abc") }},
		{"read no-follow of a directory, then a file", func(d string) { os.Mkdir(d+"/f", 0o755) },
			func(d string) { fsdeps.ReadNoFollow(d+"/f", 100) },
			func(d string) { os.Remove(d + "/f"); write(t, d+"/f", "") }},
		{"statfs, then a path elsewhere", func(d string) { os.Mkdir(d+"/x", 0o755) },
			func(d string) { fsdeps.Statfs(d + "/x") },
			func(d string) { os.Remove(d + "/x"); os.Symlink("/proc", d+"/x") }},
		{"evalsymlinks, then a component retargeted", func(d string) {
			os.MkdirAll(d+"/a/b", 0o755)
			os.MkdirAll(d+"/c/b", 0o755)
			os.Symlink("a", d+"/l1")
			os.Symlink("l1", d+"/l2")
		},
			func(d string) { fsdeps.EvalSymlinks(d + "/l2/b") },
			func(d string) { os.Remove(d + "/l1"); os.Symlink("c", d+"/l1") }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d, b := settledRecord(t, c.setup, c.record)
			mustHold(t, b)
			mustHold(t, b) // checking changes nothing
			c.change(d)
			mustFail(t, b, c.name)
		})
	}
}

// TestDepsKernelContent checks a kernel file by its content: the same
// bytes hold, any other (longer, shorter, changed) does not. (The host's
// sysctls are not changed: the record is.)
func TestDepsKernelContent(t *testing.T) {
	b := recorded(t, func() { fsdeps.ReadFile("/proc/sys/kernel/osrelease") })
	mustHold(t, b)
	deps := fsdeps.Deps()
	if len(deps) != 1 || deps[0].Kind != fsdeps.KindFileContent {
		t.Fatalf("deps %v", deps)
	}
	orig := deps[0].Data
	for _, data := range []string{orig + "x", orig[:len(orig)-1], "x" + orig[1:], ""} {
		deps[0].Data = data
		c, _ := fsdeps.Encode(deps)
		mustFail(t, c, "a kernel file's content changed to "+data)
	}
}

func TestDepsIndexOfFailure(t *testing.T) {
	d, b := settledRecord(t, func(d string) { write(t, d+"/a", "") }, func(d string) {
		fsdeps.Lstat(d + "/a")
		fsdeps.Lstat(d + "/b")
		fsdeps.Lstat(d + "/c")
	})
	write(t, d+"/c", "")
	ok, i, why := CheckDeps(b)
	if ok || i != 2 || why != DepsErrno {
		t.Fatalf("CheckDeps = %v, %d, %v; want false, 2, %v", ok, i, why, DepsErrno)
	}
	os.Chmod(d+"/a", 0o600)
	if ok, i, why = CheckDeps(b); ok || i != 0 || why != DepsChanged {
		t.Fatalf("CheckDeps = %v, %d, %v; want false, 0, %v", ok, i, why, DepsChanged)
	}
}

func TestDepsMalformed(t *testing.T) {
	_, b := settledRecord(t, func(d string) {
		os.Symlink("target", d+"/l")
		write(t, d+"/f", "x")
	}, func(d string) {
		fsdeps.Lstat(d)
		fsdeps.Readlink(d + "/l")
		fsdeps.ReadFile(d + "/f")
		fsdeps.ReadFile("/proc/sys/kernel/osrelease")
		fsdeps.Statfs(d)
		fsdeps.ReadDir(d)
	})
	mustHold(t, b)
	if ok, _, _ := CheckDeps(nil); ok {
		t.Error("nil holds")
	}
	for n := 0; n < len(b); n++ {
		if ok, _, why := CheckDeps(b[:n]); ok || why != DepsMalformed {
			t.Fatalf("%d of %d bytes: %v %v", n, len(b), ok, why)
		}
	}
	if ok, _, why := CheckDeps(append(append([]byte(nil), b...), 0)); ok || why != DepsMalformed {
		t.Error("a trailing byte is accepted")
	}
	// A size field that says the trailing byte is there: still malformed
	// (no record covers it).
	long := append(append([]byte(nil), b...), 0)
	binary.LittleEndian.PutUint32(long[12:], uint32(len(long)))
	if ok, i, why := CheckDeps(long); ok || why != DepsMalformed || i != -1 {
		t.Errorf("a trailing byte: %v %d %v", ok, i, why)
	}
	// Every single byte changed: never a crash; malformed or failed.
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < len(b); i++ {
		for _, v := range []byte{0, 0xff, byte(rng.Intn(256))} {
			c := append([]byte(nil), b...)
			c[i] = v
			CheckDeps(c)
		}
	}
	// Huge lengths.
	for _, off := range []int{16 + 8} {
		c := append([]byte(nil), b...)
		binary.LittleEndian.PutUint32(c[off:], 0xffffffff)
		if ok, i, why := CheckDeps(c); ok || why != DepsMalformed || i != 0 {
			t.Errorf("path length 2^32-1: %v %d %v", ok, i, why)
		}
	}
}

// fuzzCorpus reads the inputs of the C fuzzer's corpus for harness
// (spawn/fuzz/corpus/<harness>: real stored recipes' parts and what
// libFuzzer found from them).
func fuzzCorpus(t *testing.T, harness string) [][]byte {
	t.Helper()
	dir := filepath.Join("fuzz", "corpus", harness)
	ents, err := os.ReadDir(dir)
	if err != nil || len(ents) == 0 {
		t.Fatalf("the fuzz corpus %s: %v (%d inputs)", dir, err, len(ents))
	}
	var out [][]byte
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

func BenchmarkDepsCheck(b *testing.B) {
	d := b.TempDir()
	for i := 0; i < 100; i++ {
		os.WriteFile(filepath.Join(d, "f"+string(rune('a'+i%26))+itoaTest(i)), nil, 0o600)
	}
	time.Sleep(60 * time.Millisecond)
	fsdeps.Reset()
	for i := 0; i < 100; i++ {
		fsdeps.Lstat(filepath.Join(d, "f"+string(rune('a'+i%26))+itoaTest(i)))
	}
	enc, _ := fsdeps.Encode(fsdeps.Deps())
	fsdeps.Reset()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if ok, _, _ := CheckDeps(enc); !ok {
			b.Fatal("does not hold")
		}
	}
}

func itoaTest(i int) string { return string(rune('0'+i/10)) + string(rune('0'+i%10)) }

// TestDepsLookAtAFIFONotOpenIt: a FIFO where a recorded read failed, or
// where a careful read looks (what a program may have put where a git
// include points), is looked at, not opened, by the check (C) and by the
// record (ReadNoFollow): opening one has effects of its own (a writer
// waiting on it goes on). inotify shows an open by its close, on every
// kernel (before 6.5 an O_PATH open made an event too, its close never).
func TestDepsLookAtAFIFONotOpenIt(t *testing.T) {
	d, b := settledRecord(t, nil, func(d string) { fsdeps.ReadNoFollow(d+"/f", 100) })
	mustHold(t, b)
	if err := syscall.Mkfifo(d+"/f", 0o600); err != nil {
		t.Fatal(err)
	}
	in, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	defer syscall.Close(in)
	if _, err := syscall.InotifyAddWatch(in, d+"/f", syscall.IN_CLOSE_WRITE|syscall.IN_CLOSE_NOWRITE); err != nil {
		t.Fatal(err)
	}
	opened := func() bool {
		var buf [4096]byte
		n, err := syscall.Read(in, buf[:])
		return err == nil && n > 0
	}
	mustFail(t, b, "a FIFO was made")
	if opened() {
		t.Error("the check opened the FIFO")
	}
	fsdeps.Reset()
	t.Cleanup(fsdeps.Reset)
	f, err := fsdeps.ReadNoFollow(d+"/f", 100)
	if err != nil || f.Data != nil || f.Info.IsRegular() {
		t.Errorf("ReadNoFollow of a FIFO: %+v, %v", f, err)
	}
	if opened() {
		t.Error("ReadNoFollow opened the FIFO")
	}
}
