package spawn

import (
	"bytes"
	"crypto/sha256"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

const keyChildEnv = "SE_RECIPE_KEY_CHILD=1"

// TestRecipeKeyChild is the process TestRecipeKey starts: it prints the key
// the constructor computed and the one the encoding in recipekey.h gives,
// computed here in Go from the same inputs.
func TestRecipeKeyChild(t *testing.T) {
	if os.Getenv("SE_RECIPE_KEY_CHILD") != "1" {
		t.Skip("run by TestRecipeKey")
	}
	key, idx, ok := RecipeKey()
	fmt.Printf("C %x %d %t\n", key, idx, ok)
	sep := -1
	for i, a := range os.Args {
		if i > 0 && a == "--" {
			sep = i
			break
		}
	}
	if sep < 0 || sep+1 >= len(os.Args) {
		fmt.Println("Go none")
		return
	}
	want, err := goRecipeKey(os.Args[1:sep])
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("Go %x\n", want)
	if k, ok := RecipeKeyFor(os.Args[idx:]); !ok || k != key {
		t.Errorf("RecipeKeyFor(os.Args[%d:]) = %x, %t", idx, k, ok)
	}
	if _, ok := RecipeKeyFor(os.Args[idx-1:]); ok {
		t.Errorf("RecipeKeyFor(os.Args[%d:]): a key for an argv that does not start at the program", idx-1)
	}
}

// goRecipeKey is the key recipekey.h specifies, for this process, computed
// independently of the C code.
func goRecipeKey(helperArgs []string) ([32]byte, error) {
	var e []byte
	u32 := func(v uint32) { e = binary.LittleEndian.AppendUint32(e, v) }
	u64 := func(v uint64) { e = binary.LittleEndian.AppendUint64(e, v) }
	str := func(s string) { u32(uint32(len(s))); e = append(e, s...) }
	tag := func(b byte) { e = append(e, b) }
	readFile := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			panic(err)
		}
		return string(b)
	}
	readlink := func(path string) string {
		s, err := os.Readlink(path)
		if err != nil {
			panic(err)
		}
		return s
	}

	str("sandbox-executable recipe key v1")
	tag(1)
	id, err := buildID("/proc/self/exe")
	if err != nil {
		return [32]byte{}, err
	}
	if id != nil {
		tag(1)
		str(string(id))
	} else {
		var st unix.Stat_t
		if err := unix.Stat("/proc/self/exe", &st); err != nil {
			return [32]byte{}, err
		}
		tag(2)
		u32(40)
		for _, v := range []uint64{st.Dev, st.Ino, uint64(st.Size), uint64(st.Mtim.Sec), uint64(st.Mtim.Nsec)} {
			u64(v)
		}
	}
	tag(2)
	u32(uint32(len(helperArgs)))
	for _, a := range helperArgs {
		str(a)
	}
	tag(3)
	env := os.Environ()
	u32(uint32(len(env)))
	for _, v := range env {
		str(v)
	}
	cwd, err := unix.Getwd()
	if err != nil {
		return [32]byte{}, err
	}
	tag(4)
	str(cwd)
	tag(5)
	status := strings.Split(readFile("/proc/self/status"), "\n")
	for _, name := range []string{"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:", "NoNewPrivs:", "Seccomp:", "Seccomp_filters:"} {
		line := ""
		for _, l := range status {
			if strings.HasPrefix(l, name) {
				line = l
				break
			}
		}
		str(line)
	}
	sb, err := unix.PrctlRetInt(unix.PR_GET_SECUREBITS, 0, 0, 0, 0)
	if err != nil {
		return [32]byte{}, err
	}
	tag(6)
	u32(uint32(sb))
	tag(7)
	for fd := 0; fd < 3; fd++ {
		_, err := unix.IoctlGetTermios(fd, unix.TCGETS)
		var errno unix.Errno
		switch {
		case err == nil:
			u32(0)
			str(readlink("/proc/self/fd/" + strconv.Itoa(fd)))
		case errors.As(err, &errno):
			u32(uint32(errno))
		default:
			return [32]byte{}, err
		}
	}
	_, _, nofile := InitialState()
	tag(8)
	u64(nofile.Cur)
	u64(nofile.Max)
	tag(9)
	str(readFile("/proc/self/cgroup"))
	tag(10)
	for _, ns := range []string{"mnt", "user", "pid"} {
		str(readlink("/proc/self/ns/" + ns))
	}
	tag(11)
	str(readFile("/proc/sys/kernel/random/boot_id"))
	return sha256.Sum256(e), nil
}

// buildID is the descriptor of the executable's NT_GNU_BUILD_ID note, or
// nil without one.
func buildID(path string) ([]byte, error) {
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type != elf.PT_NOTE {
			continue
		}
		b := make([]byte, p.Filesz)
		if _, err := p.ReadAt(b, 0); err != nil {
			return nil, err
		}
		align := uint64(4)
		if p.Align == 8 {
			align = 8
		}
		round := func(n uint32) uint64 { return (uint64(n) + align - 1) &^ (align - 1) }
		for len(b) >= 12 {
			namesz, descsz, typ := f.ByteOrder.Uint32(b), f.ByteOrder.Uint32(b[4:]), f.ByteOrder.Uint32(b[8:])
			name, desc := round(namesz), round(descsz)
			if 12+name+desc > uint64(len(b)) {
				break
			}
			if typ == 3 && namesz == 4 && string(b[12:16]) == "GNU\x00" && descsz > 0 {
				return b[12+name : 12+name+uint64(descsz)], nil
			}
			b = b[12+name+desc:]
		}
	}
	return nil, nil
}

type keyRun struct {
	args  []string // after the test flag and "x"
	env   []string
	dir   string
	stdin *os.File // nil: /dev/null
	// closeStdin starts the child with fd 0 closed.
	closeStdin bool
}

type keyResult struct {
	key   string
	index int
	ok    bool
}

// runKeyChild starts this test binary as TestRecipeKeyChild with r's
// arguments, environment, directory and stdin, and checks that the C key
// is the one recipekey.h's encoding gives.
func runKeyChild(t *testing.T, r keyRun) keyResult {
	t.Helper()
	return runKeyChildOf(t, os.Args[0], r)
}

// runKeyChildOf is runKeyChild with the test binary bin.
func runKeyChildOf(t *testing.T, bin string, r keyRun) keyResult {
	t.Helper()
	// "x" ends the test flags: the rest looks like the helper's options.
	cmd := exec.Command(bin, append([]string{"-test.run=^TestRecipeKeyChild$", "x"}, r.args...)...)
	if r.closeStdin {
		// The Go runtime of the child opens /dev/null on a closed fd
		// 0 as it starts: the C key, computed before, saw it closed.
		cmd = exec.Command("/bin/sh", append([]string{"-c", `exec "$0" "$@" <&-`}, cmd.Args...)...)
	}
	cmd.Env = append(append([]string{}, r.env...), keyChildEnv)
	cmd.Dir = r.dir
	if r.stdin != nil {
		cmd.Stdin = r.stdin
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("%q: %v\n%s", r.args, err, out.String())
	}
	var res keyResult
	var goKey string
	for _, line := range strings.Split(out.String(), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 4 && f[0] == "C":
			res.key = f[1]
			res.index, _ = strconv.Atoi(f[2])
			res.ok = f[3] == "true"
		case len(f) == 2 && f[0] == "Go":
			goKey = f[1]
		}
	}
	if goKey == "" {
		t.Fatalf("%q: no output from the child:\n%s", r.args, out.String())
	}
	if goKey == "none" {
		if res.ok {
			t.Errorf("%q: a key (%s) where there should be none", r.args, res.key)
		}
		return res
	}
	if r.closeStdin {
		return res // the Go side cannot see what the C side saw
	}
	if !res.ok || res.key != goKey {
		t.Errorf("%q: C key %s (ok %t), the encoding gives %s", r.args, res.key, res.ok, goKey)
	}
	return res
}

// TestRecipeKey: the key changes with the helper's arguments, the
// environment, the directory and the terminal, and not with the
// program's argv; without a program after "--" there is none.
func TestRecipeKey(t *testing.T) {
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	dir, other := t.TempDir(), t.TempDir()
	env := []string{"PATH=/usr/bin:/bin", "HOME=/root"}
	base := keyRun{args: []string{"--sandbox-policy", "{}", "--", "prog", "a"}, env: env, dir: dir, stdin: devnull}
	b := runKeyChild(t, base)
	if !b.ok || b.index != 6 {
		t.Fatalf("base run: %+v, want a key and the program at index 6", b)
	}
	with := func(f func(r *keyRun)) keyRun {
		r := base
		r.args = append([]string{}, base.args...)
		r.env = append([]string{}, base.env...)
		f(&r)
		return r
	}

	same := map[string]keyRun{
		"again":                      base,
		"other program args":         with(func(r *keyRun) { r.args = append(r.args[:3], "other", "x", "y") }),
		"a second -- in the program": with(func(r *keyRun) { r.args = append(r.args, "--", "z") }),
		"program is --":              with(func(r *keyRun) { r.args = append(r.args[:3], "--") }),
	}
	for name, r := range same {
		if got := runKeyChild(t, r); got.key != b.key || got.index != b.index || !got.ok {
			t.Errorf("%s: %+v, want the base key %s at index %d", name, got, b.key, b.index)
		}
	}

	differ := map[string]keyRun{
		"helper arg changed":        with(func(r *keyRun) { r.args[1] = `{"a":1}` }),
		"helper arg added":          with(func(r *keyRun) { r.args = append([]string{"--keep-env"}, r.args...) }),
		"helper args split apart":   with(func(r *keyRun) { r.args = append([]string{"--sandbox-policy", "{", "}"}, r.args[2:]...) }),
		"helper args joined":        with(func(r *keyRun) { r.args = append([]string{"--sandbox-policy{}"}, r.args[2:]...) }),
		"env var added":             with(func(r *keyRun) { r.env = append(r.env, "X=1") }),
		"env var changed":           with(func(r *keyRun) { r.env[1] = "HOME=/home" }),
		"env reordered":             with(func(r *keyRun) { r.env[0], r.env[1] = r.env[1], r.env[0] }),
		"env vars merged":           with(func(r *keyRun) { r.env = []string{"PATH=/usr/bin:/bin" + "HOME=/root"} }),
		"other directory":           with(func(r *keyRun) { r.dir = other }),
		"stdin closed":              with(func(r *keyRun) { r.closeStdin = true }),
		"an arg moved into the env": with(func(r *keyRun) { r.args = r.args[2:]; r.env = append(r.env, "--sandbox-policy", "{}") }),
	}
	if pty, n, err := openPty(); err == nil {
		defer pty.Close()
		defer n.Close()
		differ["stdin a terminal"] = with(func(r *keyRun) { r.stdin = n })
	} else {
		t.Logf("no terminal case: %v", err)
	}
	seen := map[string]string{b.key: "base"}
	for name, r := range differ {
		got := runKeyChild(t, r)
		if !got.ok {
			t.Errorf("%s: no key", name)
			continue
		}
		if prev, dup := seen[got.key]; dup {
			t.Errorf("%s: key %s, the same as %s's", name, got.key, prev)
		}
		seen[got.key] = name
	}

	for name, args := range map[string][]string{
		"no --":                       {"--sandbox-policy", "{}", "prog"},
		"nothing after --":            {"--sandbox-policy", "{}", "--"},
		"-- only":                     {"--"},
		"no arguments but the test's": {},
	} {
		if got := runKeyChild(t, with(func(r *keyRun) { r.args = args })); got.ok {
			t.Errorf("%s: a key %s", name, got.key)
		}
	}
	if got := runKeyChild(t, with(func(r *keyRun) { r.args = []string{"--", "prog"} })); !got.ok || got.index != 4 {
		t.Errorf("no helper args but the test's: %+v, want a key and the program at index 4", got)
	}
}

// openPty opens a new pseudo-terminal pair.
func openPty() (master, slave *os.File, err error) {
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		return nil, nil, err
	}
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		m.Close()
		return nil, nil, err
	}
	n, err := unix.IoctlGetUint32(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(int(n)), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		m.Close()
		return nil, nil, err
	}
	return m, s, nil
}

// TestRecipeKeyOtherLinks: the key is the encoding's in a static binary
// (the build-id found through dl_iterate_phdr without a dynamic loader,
// as the release is linked) and in one linked without a GNU build-id
// note, which is named by the stat of /proc/self/exe instead: copies of it
// at other inodes have other keys.
func TestRecipeKeyOtherLinks(t *testing.T) {
	if testing.Short() {
		t.Skip("builds this package's test binary again, twice")
	}
	goCmd, err := exec.LookPath("go")
	if err != nil {
		if goCmd, err = exec.LookPath("/usr/local/go/bin/go"); err != nil {
			testcap.Skipf(t, testcap.Installed, "no go command to build with")
		}
	}
	dir := t.TempDir()
	build := func(name string, args ...string) string {
		bin := filepath.Join(dir, name)
		cmd := exec.Command(goCmd, append(append([]string{"test", "-c", "-o", bin}, args...), ".")...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v\n%s", err, out)
		}
		return bin
	}
	r := keyRun{args: []string{"--", "prog"}, env: []string{"PATH=/usr/bin:/bin"}, dir: dir}

	static := build("static.test", "-tags=osusergo,netgo", "-ldflags=-linkmode=external -extldflags=-static")
	if id, err := buildID(static); err != nil || id == nil {
		t.Fatalf("the static binary has no build-id: %v", err)
	}
	if k := runKeyChildOf(t, static, r); !k.ok {
		t.Errorf("static binary: no key")
	}

	bin := build("nobuildid.test", "-ldflags=-linkmode=external -extldflags=-Wl,--build-id=none")
	if id, err := buildID(bin); err != nil || id != nil {
		t.Fatalf("the binary built without a build-id has one: %x, %v", id, err)
	}
	copyBin := filepath.Join(dir, "copy.test")
	b, err := os.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyBin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	k1 := runKeyChildOf(t, bin, r)
	k2 := runKeyChildOf(t, copyBin, r)
	if !k1.ok || !k2.ok || k1.key == k2.key {
		t.Errorf("two copies of a binary without a build-id: %+v and %+v, want two different keys", k1, k2)
	}
	if again := runKeyChildOf(t, bin, r); again != k1 {
		t.Errorf("the same binary again: %+v, want %+v", again, k1)
	}
}
