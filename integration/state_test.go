package integration

// The helper's own state cannot be turned against the user (issue 11, item
// 2: a run that could write the state directory replaced the cached seccomp
// filter with "return ALLOW", and a later run loaded it), and the private
// TMPDIR is bounded (item 8).
//
// Nothing here touches another test's state: root's runs see a state
// directory of the test's own (bound over /run/sandbox-executable in a
// private mount namespace), and the unprivileged runs are by uids of the
// test's own, whose state directories it removes.

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// allowAllBPF is a whole seccomp program that allows every call: one
// BPF_RET|BPF_K returning SECCOMP_RET_ALLOW.
var allowAllBPF = []byte{0x06, 0, 0, 0, 0x00, 0x00, 0xff, 0x7f}

// stateUser is who runs the helper in the state tests, and where its state
// directory is.
type stateUser struct {
	name string
	cred *syscall.Credential // nil: root
	via  []string            // how the helper is started (root: in a mount namespace of the test's)
	// state is the state directory as the helper sees it, host where the
	// test finds it; fallback is the other place every sandbox must be
	// denied ("" for none).
	state, host, fallback string
	// parents are the directories holding them: an attacker's writable
	// roots.
	parents []string
}

// stateUsers are root, a user without a runtime directory (the state goes
// to /tmp), and a user with one.
func stateUsers(t *testing.T) []stateUser {
	t.Helper()
	isoNeedRoot(t)
	isoNeedTools(t, "unshare", "mount", "sh")
	// root: its own state directory, bound where the helper looks.
	host := t.TempDir()
	if err := os.Chmod(host, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll("/run/sandbox-executable", 0o700); err != nil {
		t.Fatal(err)
	}
	users := []stateUser{{
		name:    "root",
		via:     []string{"unshare", "--mount", "--propagation", "private", "--", "sh", "-c", `mount --bind "$0" /run/sandbox-executable && exec "$@"`, host},
		state:   "/run/sandbox-executable",
		host:    host,
		parents: []string{"/run"},
	}}
	uid := 62000 + os.Getpid()%1000*2
	cred := func(uid int) *syscall.Credential {
		return &syscall.Credential{Uid: uint32(uid), Gid: uint32(uid)}
	}
	tmpState := func(uid int) string { return "/tmp/sandbox-executable-" + strconv.Itoa(uid) }
	for _, u := range []int{uid, uid + 1} {
		t.Cleanup(func() {
			os.RemoveAll(tmpState(u))
			os.RemoveAll(tmpState(u) + ".moved")
			os.RemoveAll("/run/user/" + strconv.Itoa(u))
		})
		os.RemoveAll(tmpState(u))
		os.RemoveAll("/run/user/" + strconv.Itoa(u))
	}
	users = append(users, stateUser{name: "user", cred: cred(uid), state: tmpState(uid), host: tmpState(uid), parents: []string{"/tmp"}})
	// A user with a runtime directory, as systemd-logind makes it.
	rt := "/run/user/" + strconv.Itoa(uid+1)
	if st, err := os.Stat("/run/user"); err == nil && st.IsDir() {
		if err := os.Mkdir(rt, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chown(rt, uid+1, uid+1); err != nil {
			t.Fatal(err)
		}
		users = append(users, stateUser{name: "user-with-runtime-dir", cred: cred(uid + 1), state: rt + "/sandbox-executable",
			host: rt + "/sandbox-executable", fallback: tmpState(uid + 1), parents: []string{rt, "/tmp"}})
	} else {
		t.Logf("no /run/user here: the user with a runtime directory is not tried")
	}
	return users
}

// cacheNames lists the entries of the cache directories under dirs.
func cacheNames(dirs ...string) []string {
	seen := map[string]bool{}
	var names []string
	for _, d := range dirs {
		ents, _ := os.ReadDir(filepath.Join(d, "bpf"))
		for _, e := range ents {
			if !seen[e.Name()] && !strings.Contains(e.Name(), ".tmp-") {
				seen[e.Name()] = true
				names = append(names, e.Name())
			}
		}
	}
	return names
}

// TestStateCannotBeForged reproduces the attack: run 1, whose writable roots
// include the directory holding the state directory and whose environment
// points XDG_RUNTIME_DIR and TMPDIR elsewhere, overwrites every cache entry
// with "return ALLOW", plants new ones, reads the key, moves the state
// directory away, and (for a user whose state is in the runtime directory)
// prepares the /tmp place it would fall back to; run 2, without
// XDG_RUNTIME_DIR, must still have its filter (unshare refused). Then the
// entries are forged from outside every sandbox (as a sandbox under some
// other tool could): run 2 must reject them, say so in its report, and
// rebuild them.
func TestStateCannotBeForged(t *testing.T) {
	for _, u := range stateUsers(t) {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := isoWorkspace(t, isoUser{name: u.name, cred: u.cred})
				for _, d := range []string{"xdg", "tmpdir"} {
					mustMkdir(t, filepath.Join(w.out, d))
					if u.cred != nil {
						os.Chown(filepath.Join(w.out, d), int(u.cred.Uid), int(u.cred.Gid))
					}
				}
				sb := func(env []string, pol string, extra []string, argv ...string) result {
					args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol}, fsOpts(t, mode)...)
					args = append(append(append(args, extra...), "--"), argv...)
					// A report's run is about the filter cache Go finds.
					return run(t, runOpts{env: isoEnv(w, env...), dir: w.root, cred: u.cred, via: u.via, unprimed: len(extra) > 0}, args...)
				}
				victim := func(extra ...string) result {
					t.Helper()
					r := sb(nil, wsPolicy(t, w.root), extra, probe, "unshare-user")
					if v := probeResult(r); v != "EPERM" {
						t.Errorf("unshare(CLONE_NEWUSER): %s, want EPERM: the run's filter is gone (%v)", v, r)
					}
					return r
				}

				// Run 0 fills the cache with the victim's filter.
				victim()
				names := cacheNames(u.host, u.fallback)
				if len(names) == 0 {
					t.Fatalf("no cache entries in %s after a run", u.host)
				}

				// Run 1, the attacker.
				var script strings.Builder
				script.WriteString(`w() { printf '\006\000\000\000\000\000\377\177' > "$1" 2>/dev/null && echo "wrote $1"; }` + "\n")
				for _, dir := range []string{u.state, u.fallback} {
					if dir == "" {
						continue
					}
					fmt.Fprintf(&script, "mkdir -p %s/bpf 2>/dev/null\n", dir)
					for _, n := range append(names, "planted") {
						fmt.Fprintf(&script, "w %s/bpf/%s\n", dir, n)
					}
					fmt.Fprintf(&script, "w %s/key.new\n", dir)
					fmt.Fprintf(&script, "cat %s/key >/dev/null 2>&1 && echo \"read %s/key\"\n", dir, dir)
					fmt.Fprintf(&script, "ls %s/bpf >/dev/null 2>&1 && echo \"listed %s/bpf\"\n", dir, dir)
					// Unnamed files (O_TMPFILE) need no right to make a
					// name, only to write beneath the directory (issue 26,
					// item 7a), and the key may be overwritten in place.
					for _, sub := range []string{"", "/bpf", "/recipes", "/placeholders", "/tmpdirs"} {
						fmt.Fprintf(&script, "[ \"$(%s tmpfile %s%s)\" = ok ] && echo \"unnamed file in %s%s\"\n", probe, dir, sub, dir, sub)
					}
					fmt.Fprintf(&script, "[ \"$(%s append %s/key)\" = ok ] && echo \"opened %s/key for writing\"\n", probe, dir, dir)
					fmt.Fprintf(&script, "mv %s %s.moved 2>/dev/null && echo \"moved %s\"\n", dir, dir, dir)
				}
				script.WriteString("exit 0\n")
				env := []string{"XDG_RUNTIME_DIR=" + filepath.Join(w.out, "xdg"), "TMPDIR=" + filepath.Join(w.out, "tmpdir")}
				r := sb(env, wsPolicy(t, append([]string{w.root}, u.parents...)...), nil, "/bin/sh", "-c", script.String())
				if r.code != 0 || strings.TrimSpace(r.stdout) != "" {
					t.Errorf("a sandbox whose roots hold the state directory got at it:\n%s(%v)", r.stdout, r)
				}

				// Run 2, without XDG_RUNTIME_DIR: still filtered.
				victim()

				// Entries forged from outside: rejected, said, rebuilt.
				forged := 0
				for _, n := range cacheNames(u.host) {
					if err := os.WriteFile(filepath.Join(u.host, "bpf", n), allowAllBPF, 0o600); err != nil {
						t.Fatal(err)
					}
					forged++
				}
				if forged == 0 {
					t.Fatalf("no cache entries in %s to forge", u.host)
				}
				rep := filepath.Join(w.out, "report.json")
				victim("--report-file", rep)
				if c, why := seccompCache(t, rep); c != "rejected" || !strings.Contains(why, "tag") {
					t.Errorf("forged entry: report says cache %q (%q), want rejected with the reason", c, why)
				}
				// Decided again (the warm path would carry out the recipe
				// the run above stored, whose filter is its own): the
				// rebuilt entry is loaded.
				if r := sb([]string{"SANDBOX_EXECUTABLE_WARM=off"}, wsPolicy(t, w.root), []string{"--report-file", rep}, probe, "unshare-user"); probeResult(r) != "EPERM" {
					t.Errorf("after the rebuild: the run's filter is gone (%v)", r)
				}
				if c, _ := seccompCache(t, rep); c != "loaded" {
					t.Errorf("after the rebuild: cache %q, want loaded", c)
				}
				// A run of the stored recipe says so, not what the decision
				// it came from found in the cache.
				victim("--report-file", rep)
				if c, _ := seccompCache(t, rep); c != "recipe" && c != "loaded" {
					t.Errorf("the next run: cache %q, want recipe (or loaded, decided again)", c)
				}

				// The key is where it must be, the user's alone.
				var st syscall.Stat_t
				key := filepath.Join(u.host, "key")
				if err := syscall.Lstat(key, &st); err != nil || st.Mode&syscall.S_IFMT != syscall.S_IFREG || st.Mode&0o077 != 0 || st.Size != 32 {
					t.Errorf("key %s: mode %o size %d: %v", key, st.Mode, st.Size, err)
				} else if u.cred != nil && st.Uid != u.cred.Uid {
					t.Errorf("key %s owned by uid %d", key, st.Uid)
				}
				// --explain shows the directories denied.
				er := run(t, runOpts{env: isoEnv(w), dir: w.root, cred: u.cred, via: u.via},
					append(append([]string{"--explain", "--sandbox-policy-cwd", w.root, "--sandbox-policy", wsPolicy(t, w.root)}, fsOpts(t, mode)...), "--", "/bin/true")...)
				var plan struct {
					Plan struct {
						Filesystem struct {
							ReadDenied []struct{ Path, Source string } `json:"read_denied"`
						} `json:"filesystem"`
					} `json:"plan"`
				}
				if err := json.Unmarshal([]byte(er.stdout), &plan); err != nil {
					t.Fatalf("--explain: %v (%v)", err, er)
				}
				for _, dir := range []string{u.state, u.fallback} {
					found := false
					for _, d := range plan.Plan.Filesystem.ReadDenied {
						found = found || d.Path == dir && strings.HasPrefix(d.Source, "sandbox-executable's state directory")
					}
					if dir != "" && !found {
						t.Errorf("--explain does not list %s as the state directory, read-denied: %+v", dir, plan.Plan.Filesystem.ReadDenied)
					}
				}
			})
		}
	}
}

// seccompCache reads enforcement.seccomp.cache and cache_rejected from a
// report, validated against the schema.
func seccompCache(t *testing.T, path string) (string, string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("no report: %v", err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if err := reportSchema(t).Validate(doc); err != nil {
		t.Errorf("report does not validate: %v", err)
	}
	var rep struct {
		Enforcement struct {
			Seccomp struct {
				Cache         string `json:"cache"`
				CacheRejected string `json:"cache_rejected"`
			} `json:"seccomp"`
		} `json:"enforcement"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatal(err)
	}
	return rep.Enforcement.Seccomp.Cache, rep.Enforcement.Seccomp.CacheRejected
}

// TestPrivateTmpIsBounded: the private TMPDIR is a tmpfs of max_disk_mb, so
// 6 x 900 KiB (each file within the per-file limit) cannot pass a 1 MiB
// limit in all, and nothing of it is left on the host.
func TestPrivateTmpIsBounded(t *testing.T) {
	for _, u := range isoAnyUser(t) {
		for _, mode := range fsModes {
			t.Run(u.name+"/"+mode, func(t *testing.T) {
				w := isoWorkspace(t, u)
				pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []any{},
					"exclude_slash_tmp": true, "exclude_tmpdir_env_var": true, "resource_limits": map[string]any{"max_disk_mb": 1}})
				rep := filepath.Join(w.out, "report.json")
				args := append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol, "--report-file", rep}, fsOpts(t, mode)...)
				r := run(t, runOpts{env: isoEnv(w), dir: w.root, cred: u.cred}, append(args, "--", "/bin/sh", "-c", `
					echo "tmpdir $TMPDIR"
					for i in 1 2 3 4 5 6; do dd if=/dev/zero of="$TMPDIR/f$i" bs=1024 count=900 2>&1; done
					echo "total $(cat "$TMPDIR"/f* | wc -c)"`)...)
				tmp := ""
				total := -1
				for _, l := range strings.Split(r.stdout, "\n") {
					if v, ok := strings.CutPrefix(l, "tmpdir "); ok {
						tmp = v
					}
					if v, ok := strings.CutPrefix(l, "total "); ok {
						total, _ = strconv.Atoi(strings.TrimSpace(v))
					}
				}
				if !strings.HasPrefix(tmp, "/") {
					t.Fatalf("no private TMPDIR: %v", r)
				}
				if !strings.Contains(r.stdout, "No space left on device") || total < 0 || total > 1<<20 {
					t.Errorf("6 x 900 KiB into a TMPDIR of max_disk_mb 1: %d bytes written, no ENOSPC:\n%s", total, r.stdout)
				}
				checkTmpLeftNothing(t, mode, u, tmp)
				b, err := os.ReadFile(rep)
				if err != nil {
					t.Fatal(err)
				}
				var doc struct {
					Enforcement struct {
						Filesystem struct {
							PrivateTmp      bool   `json:"private_tmp"`
							PrivateTmpBytes uint64 `json:"private_tmp_bytes"`
							PrivateTmpBound string `json:"private_tmp_bound"`
						} `json:"filesystem"`
					} `json:"enforcement"`
				}
				if err := json.Unmarshal(b, &doc); err != nil {
					t.Fatal(err)
				}
				if f := doc.Enforcement.Filesystem; !f.PrivateTmp || f.PrivateTmpBytes != 1<<20 || !strings.Contains(f.PrivateTmpBound, "tmpfs") {
					t.Errorf("report: %+v", f)
				}
			})
		}
	}
}

// checkTmpLeftNothing checks that a run's private TMPDIR tmp left nothing
// on the host: in exact mode it is the user's shared mount point, which
// stays and must be empty, a directory of the user's with mode 0700 (the
// run's tmpfs was on it, in its own mount namespace); in Landlock-only
// mode it is the run's own directory, which must be gone.
func checkTmpLeftNothing(t *testing.T, mode string, u isoUser, tmp string) {
	t.Helper()
	if mode != "exact" {
		if _, err := os.Lstat(tmp); !os.IsNotExist(err) {
			t.Errorf("private TMPDIR %s left on the host: %v", tmp, err)
		}
		return
	}
	uid := 0
	if u.cred != nil {
		uid = int(u.cred.Uid)
	}
	if want := "sandbox-executable-tmp-uid" + strconv.Itoa(uid); filepath.Base(tmp) != want {
		t.Errorf("exact mode's private TMPDIR is %s, want the shared mount point .../%s", tmp, want)
	}
	fi, err := os.Lstat(tmp)
	if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 || fi.Sys().(*syscall.Stat_t).Uid != uint32(uid) {
		t.Fatalf("the shared mount point %s: %v %v", tmp, fi, err)
	}
	if ents, err := os.ReadDir(tmp); err != nil || len(ents) != 0 {
		t.Errorf("the shared mount point %s holds %v on the host (%v): the run's files reached the host", tmp, ents, err)
	}
}

// TestSharedTmpPlantedIsNotUsed: exact mode mounts every run's private
// TMPDIR on one directory per user, which stays between runs; a directory
// of that name that is not the user's own (planted: a link elsewhere,
// another user's directory, one others can write) is never used: the run
// gets a directory of its own, the planted one is not written, and a link
// is not followed.
func TestSharedTmpPlantedIsNotUsed(t *testing.T) {
	isoNeedRoot(t)
	// A temp dir of the test's own ($TMPDIR): the shared mount point of
	// other tests' runs is not touched.
	tmpRoot := t.TempDir()
	w := isoWorkspace(t, isoRoot)
	shared := filepath.Join(tmpRoot, "sandbox-executable-tmp-uid0")
	elsewhere := filepath.Join(w.out, "elsewhere")
	mustMkdir(t, elsewhere)
	pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []any{}, "exclude_slash_tmp": true, "exclude_tmpdir_env_var": true})
	tmpdir := func() string {
		t.Helper()
		r := run(t, runOpts{env: isoEnv(w, "TMPDIR="+tmpRoot), dir: w.root}, append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol},
			append(fsOpts(t, "exact"), "--", "/bin/sh", "-c", `echo data > "$TMPDIR/f" && echo "$TMPDIR"`)...)...)
		if r.code != 0 {
			t.Fatalf("run: %v", r)
		}
		return strings.TrimSpace(r.stdout)
	}
	if got := tmpdir(); got != shared {
		t.Fatalf("TMPDIR %s, want the shared mount point %s", got, shared)
	}
	checkTmpLeftNothing(t, "exact", isoRoot, shared)
	plants := []struct {
		name  string
		plant func() error
	}{
		{"a link elsewhere", func() error { return os.Symlink(elsewhere, shared) }},
		{"another user's directory", func() error {
			if err := os.Mkdir(shared, 0o700); err != nil {
				return err
			}
			return os.Chown(shared, 65534, 65534)
		}},
		{"a directory others can write", func() error {
			if err := os.Mkdir(shared, 0o700); err != nil {
				return err
			}
			return os.Chmod(shared, 0o777)
		}},
	}
	for _, p := range plants {
		t.Run(p.name, func(t *testing.T) {
			if err := os.RemoveAll(shared); err != nil {
				t.Fatal(err)
			}
			if err := p.plant(); err != nil {
				t.Fatal(err)
			}
			defer os.RemoveAll(shared)
			got := tmpdir()
			if got == shared || !strings.HasPrefix(filepath.Base(got), "sandbox-executable-tmp-") || filepath.Dir(got) != tmpRoot {
				t.Errorf("TMPDIR %s: want a directory of the run's own in %s, not the planted %s", got, tmpRoot, shared)
			}
			if _, err := os.Lstat(got); !os.IsNotExist(err) {
				t.Errorf("the run's own temp dir %s was left: %v", got, err)
			}
			for _, d := range []string{elsewhere, shared} {
				if ents, err := os.ReadDir(d); err == nil && len(ents) != 0 {
					t.Errorf("%s holds %v: the planted mount point was written", d, ents)
				}
			}
		})
	}
}

// TestSharedTmpUnderStrictUmask: the shared mount point a run makes has
// mode 0700 whatever the caller's umask took away (under umask 0777 it was
// made 0000, and the run refused itself: its own check found it unfit).
func TestSharedTmpUnderStrictUmask(t *testing.T) {
	isoNeedRoot(t)
	tmpRoot := t.TempDir()
	w := isoWorkspace(t, isoRoot)
	shared := filepath.Join(tmpRoot, "sandbox-executable-tmp-uid0")
	pol := policyJSON(t, map[string]any{"type": "workspace_write", "writable_roots": []any{}, "exclude_slash_tmp": true, "exclude_tmpdir_env_var": true})
	via := []string{"/bin/sh", "-c", `umask 0777; exec "$0" "$@"`}
	r := run(t, runOpts{env: isoEnv(w, "TMPDIR="+tmpRoot), dir: w.root, via: via}, append([]string{"--sandbox-policy-cwd", w.root, "--sandbox-policy", pol},
		append(fsOpts(t, "exact"), "--", "/bin/sh", "-c", `echo data > "$TMPDIR/f" && echo "$TMPDIR"`)...)...)
	if r.code != 0 || strings.TrimSpace(r.stdout) != shared {
		t.Fatalf("under umask 0777: %v (want TMPDIR %s)", r, shared)
	}
	checkTmpLeftNothing(t, "exact", isoRoot, shared)
}
