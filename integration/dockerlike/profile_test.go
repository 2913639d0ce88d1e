package dockerlike

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/internal/testcap"
)

// EnvProfile points at a copy of Docker's default seccomp profile; without
// it the test looks in ../shared/data/ beside the repository (as CI has it).
const EnvProfile = "SE_DOCKER_SECCOMP_JSON"

func publishedProfile(t *testing.T) []byte {
	t.Helper()
	path := os.Getenv(EnvProfile)
	if path == "" {
		_, file, _, _ := runtime.Caller(0)
		repo := filepath.Join(filepath.Dir(file), "..", "..")
		path = filepath.Join(repo, "..", "shared", "data", "docker-default-seccomp.json")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		testcap.Skipf(t, testcap.Installed, "no copy of Docker's default profile (%v); set %s", err, EnvProfile)
	}
	return b
}

// canon is a rule reduced to what the comparison needs, order-free.
func canon(r Rule) string {
	names := slices.Clone(r.Names)
	sort.Strings(names)
	f := func(x Filter) string {
		c, a := slices.Clone(x.Caps), slices.Clone(x.Arches)
		sort.Strings(c)
		sort.Strings(a)
		return fmt.Sprintf("caps=%v arches=%v kernel=%s", c, a, x.MinKernel)
	}
	return fmt.Sprintf("%v %s/%d args=%v inc{%s} exc{%s}", names, r.Action, r.Errno, r.Args, f(r.Includes), f(r.Excludes))
}

// TestProfileMatchesPublished: the encoding says what Docker's published
// default profile says, rule for rule (names, action, errno, argument
// conditions, the caps- and arch-conditional parts), and its default.
func TestProfileMatchesPublished(t *testing.T) {
	var doc struct {
		DefaultAction   string `json:"defaultAction"`
		DefaultErrnoRet uint   `json:"defaultErrnoRet"`
		Syscalls        []struct {
			Names    []string `json:"names"`
			Action   string   `json:"action"`
			ErrnoRet uint     `json:"errnoRet"`
			Args     []struct {
				Index    uint   `json:"index"`
				Value    uint64 `json:"value"`
				ValueTwo uint64 `json:"valueTwo"`
				Op       string `json:"op"`
			} `json:"args"`
			Includes struct {
				Caps      []string `json:"caps"`
				Arches    []string `json:"arches"`
				MinKernel string   `json:"minKernel"`
			} `json:"includes"`
			Excludes struct {
				Caps   []string `json:"caps"`
				Arches []string `json:"arches"`
			} `json:"excludes"`
		} `json:"syscalls"`
	}
	if err := json.Unmarshal(publishedProfile(t), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.DefaultAction != "SCMP_ACT_ERRNO" || doc.DefaultErrnoRet != DefaultErrno {
		t.Errorf("default %s/%d, encoded ERRNO/%d", doc.DefaultAction, doc.DefaultErrnoRet, DefaultErrno)
	}
	ops := map[string]string{"SCMP_CMP_EQ": "eq", "SCMP_CMP_LT": "lt", "SCMP_CMP_GT": "gt", "SCMP_CMP_MASKED_EQ": "masked_eq"}
	acts := map[string]string{"SCMP_ACT_ALLOW": "allow", "SCMP_ACT_ERRNO": "errno"}
	var want []string
	for _, s := range doc.Syscalls {
		r := Rule{Names: s.Names, Action: acts[s.Action], Errno: s.ErrnoRet,
			Includes: Filter{Caps: s.Includes.Caps, Arches: s.Includes.Arches, MinKernel: s.Includes.MinKernel},
			Excludes: Filter{Caps: s.Excludes.Caps, Arches: s.Excludes.Arches}}
		if r.Action == "" {
			t.Errorf("action %s of %v is not encoded", s.Action, s.Names)
		}
		for _, a := range s.Args {
			op, ok := ops[a.Op]
			if !ok {
				t.Errorf("op %s of %v is not encoded", a.Op, s.Names)
			}
			r.Args = append(r.Args, Arg{Index: a.Index, Op: op, Value: a.Value, Value2: a.ValueTwo})
		}
		want = append(want, canon(r))
	}
	var got []string
	for _, r := range Profile {
		got = append(got, canon(r))
	}
	sort.Strings(want)
	sort.Strings(got)
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Errorf("published, not encoded: %s", w)
		}
	}
	for _, g := range got {
		if !slices.Contains(want, g) {
			t.Errorf("encoded, not published: %s", g)
		}
	}
}

// TestRenderDefaultCaps: for Docker's default capabilities the rendered
// profile has no CAP_SYS_ADMIN part (so no mount, unshare, setns, clone
// with namespace flags), answers clone3 with ENOSYS, and has chroot (its
// one default capability with a rule of its own).
func TestRenderDefaultCaps(t *testing.T) {
	rules := Render(DefaultCaps)
	allowed := map[string]bool{}
	for _, r := range rules {
		for _, n := range r.Names {
			if r.Action == "allow" && len(r.Args) == 0 {
				allowed[n] = true
			}
		}
	}
	for _, n := range []string{"mount", "umount2", "unshare", "setns", "open_tree", "move_mount", "fsopen", "mount_setattr", "clone", "clone3", "pidfd_getfd", "bpf"} {
		if allowed[n] {
			t.Errorf("%s is allowed without condition", n)
		}
	}
	for _, n := range []string{"chroot", "landlock_create_ruleset", "landlock_restrict_self", "seccomp", "ptrace", "pidfd_open", "close_range"} {
		if !allowed[n] {
			t.Errorf("%s is not allowed", n)
		}
	}
	if !slices.ContainsFunc(rules, func(r Rule) bool { return slices.Contains(r.Names, "clone3") && r.Action == "errno" && r.Errno == 38 }) {
		t.Error("clone3 does not answer ENOSYS")
	}
	all := Render(append(slices.Clone(DefaultCaps), "CAP_SYS_ADMIN"))
	if !slices.ContainsFunc(all, func(r Rule) bool { return slices.Contains(r.Names, "mount") && r.Action == "allow" }) {
		t.Error("with CAP_SYS_ADMIN, mount is not allowed")
	}
}

const envSelfTest = "SE_DOCKERLIKE_SELFTEST"

func TestMain(m *testing.M) {
	if os.Getenv(envSelfTest) == "1" {
		selfTest()
	}
	os.Exit(m.Run())
}

// selfTest loads the filter and makes the calls it must refuse or allow,
// printing "name=errno" for each.
func selfTest() {
	runtime.LockOSThread()
	if _, err := Load(DefaultCaps); err != nil {
		fmt.Println("load:", err)
		os.Exit(1)
	}
	try := func(name string, nr uintptr, a ...uintptr) {
		for len(a) < 3 {
			a = append(a, 0)
		}
		_, _, e := unix.RawSyscall(nr, a[0], a[1], a[2])
		fmt.Printf("%s=%d\n", name, int(e))
	}
	try("unshare_user", unix.SYS_UNSHARE, unix.CLONE_NEWUSER)
	try("setns", unix.SYS_SETNS, ^uintptr(0), 0)
	try("mount", unix.SYS_MOUNT, 0, 0, 0)
	try("clone3", unix.SYS_CLONE3, 0, 0)
	try("clone_newns", unix.SYS_CLONE, unix.CLONE_NEWNS|unix.CLONE_FS, 0) // EINVAL if it reached the kernel: never clones
	try("socket_vsock", unix.SYS_SOCKET, unix.AF_VSOCK, unix.SOCK_STREAM)
	try("socket_alg", unix.SYS_SOCKET, unix.AF_ALG, unix.SOCK_SEQPACKET)
	try("personality_bsd", unix.SYS_PERSONALITY, 0x0006)
	try("personality_query", unix.SYS_PERSONALITY, 0xffffffff)
	try("getpid", unix.SYS_GETPID)
	os.Exit(0)
}

// TestFilterRefuses: the loaded filter refuses what Docker's default
// refuses (EPERM; clone3 ENOSYS) and allows what it allows.
func TestFilterRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		testcap.Skipf(t, testcap.Root, "loads the filter without no_new_privs: needs CAP_SYS_ADMIN")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envSelfTest+"=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	got := map[string]string{}
	for _, l := range strings.Fields(string(out)) {
		k, v, _ := strings.Cut(l, "=")
		got[k] = v
	}
	eperm, enosys := fmt.Sprint(int(unix.EPERM)), fmt.Sprint(int(unix.ENOSYS))
	want := map[string]string{"unshare_user": eperm, "setns": eperm, "mount": eperm, "clone3": enosys, "clone_newns": eperm,
		"socket_vsock": eperm, "socket_alg": eperm, "personality_bsd": eperm, "personality_query": "0", "getpid": "0"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: errno %s, want %s (%s)", k, got[k], v, out)
		}
	}
}
