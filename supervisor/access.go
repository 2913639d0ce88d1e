package supervisor

import (
	"path/filepath"
	"strings"

	"sandbox-executable/policy"
)

// Verdict is what a run may do with one path in one way, and the rule that
// decides it.
type Verdict struct {
	Allowed bool
	// Rule says what decides, in a few words ("outside the writable
	// roots", "a denied path", "the writable root ...").
	Rule string
	// Source is the decisive entry's source, as the Plan gives it
	// ("default_sensitive_paths", "writable_roots[0]", "--rw",
	// "protected_metadata"), "" for none.
	Source string
	// Entry is the decisive entry's path (a denied path, a writable
	// root), and Given how it was written, when that differs.
	Entry, Given string
}

// PathAccess is what a run may do with a path: read it (or list it),
// write it (create, change, remove), execute it.
type PathAccess struct {
	Path                 string
	Read, Write, Execute Verdict
}

// Access says what the run pr decides may be done with path (absolute;
// its existing part canonical, as the Plan's paths are): AccessRules.Access.
func (pr *Prepared) Access(path string) PathAccess {
	return pr.accessRules().Access(path)
}

// AccessRules are the parts of a run's decision that say what it may do
// with a path: the Plan's, the private temp dir and the scratch caches
// that exact mode overlays. The service keeps them (ServiceRecord) to
// name the rule of each file denial the kernel records.
type AccessRules struct {
	ReadDenied      []policy.DeniedPath   `json:"read_denied,omitempty"`
	WriteDenied     []policy.DeniedPath   `json:"write_denied,omitempty"`
	WritableDevices []string              `json:"writable_devices,omitempty"`
	TmpDir          string                `json:"tmp_dir,omitempty"`
	ScratchCaches   []string              `json:"scratch_caches,omitempty"`
	WritableRoots   []policy.WritablePath `json:"writable_roots,omitempty"`
	GitDirs         []policy.GitDir       `json:"git_dirs,omitempty"`
}

func (pr *Prepared) accessRules() AccessRules {
	fs := &pr.Plan.Filesystem
	return AccessRules{ReadDenied: fs.ReadDenied, WriteDenied: fs.WriteDenied, WritableDevices: fs.WritableDevices,
		TmpDir: pr.tmpDir, ScratchCaches: pr.Enforcement.Filesystem.ScratchCaches, WritableRoots: fs.WritableRoots, GitDirs: fs.GitDirs}
}

// Access says what may be done with path (absolute; its existing part
// canonical, as the Plan's paths are), by the same rules the enforcement
// follows: the denied paths first, then the writable devices, the private
// temp dir, the scratch caches and the writable roots. It reads nothing
// and makes nothing.
func (fs AccessRules) Access(path string) PathAccess {
	a := PathAccess{Path: path}
	denied := func(list []policy.DeniedPath, rule string) (Verdict, bool) {
		for _, d := range list {
			if policy.Within(path, d.Path) {
				return Verdict{Rule: rule, Source: d.Source, Entry: d.Path, Given: d.Given}, true
			}
		}
		return Verdict{}, false
	}
	if v, ok := denied(fs.ReadDenied, "a denied path, unreadable"); ok {
		a.Read, a.Execute = v, v
	} else {
		a.Read = Verdict{Allowed: true, Rule: "everything outside the denied paths is readable"}
		a.Execute = a.Read
	}
	switch {
	case a.Read.Source != "":
		a.Write = a.Read
	case containsPath(fs.WritableDevices, path):
		a.Write = Verdict{Allowed: true, Rule: "a device every program may write", Entry: path}
	default:
		if v, ok := denied(fs.WriteDenied, "a path no program may write"); ok {
			a.Write = v
			break
		}
		if fs.TmpDir != "" && policy.Within(path, fs.TmpDir) {
			a.Write = Verdict{Allowed: true, Rule: "the private TMPDIR, the run's own", Entry: fs.TmpDir}
			break
		}
		for _, c := range fs.ScratchCaches {
			if policy.Within(path, c) {
				a.Write = Verdict{Allowed: true, Rule: "a scratch cache: writes go to a throwaway copy, gone with the run", Entry: c}
			}
		}
		if a.Write.Allowed {
			break
		}
		for _, g := range fs.GitDirs {
			if policy.Within(path, g.Path) {
				a.Write = Verdict{Allowed: true, Rule: "in a writable git directory, but for what git runs or loads (no link, FIFO or socket may be made there, nothing moved in or out)", Source: g.From, Entry: g.Path}
			}
		}
		if a.Write.Allowed {
			break
		}
		for _, r := range fs.WritableRoots {
			if policy.Within(path, r.Path) {
				a.Write = Verdict{Allowed: true, Rule: "in a writable root", Source: r.Source, Entry: r.Path, Given: r.Given}
				break
			}
		}
		if !a.Write.Allowed {
			a.Write = Verdict{Rule: "outside the writable roots"}
		}
	}
	return a
}

// Advice says what would allow what v denies, op ("read", "write",
// "execute") of path, where dir is the directory a new root would be for
// it (path itself when it is one); "" for an allowed v, or where nothing
// would. standalone: the run's policy is the built-in default with
// flags composed on it, so the advice names flags; otherwise the policy's
// fields.
func (v Verdict) Advice(op, path, dir string, standalone bool) string {
	if v.Allowed {
		return ""
	}
	entry := v.Entry
	if v.Given != "" {
		entry = v.Given
	}
	switch {
	case v.Source == "protected_metadata" && filepath.Base(v.Entry) == ".git" && standalone:
		return "never writable as a whole: a program could plant a hook or change what git runs; --allow-git-commit makes it writable but for what git runs or loads"
	case IsProtectedMetadata(v.Source):
		return "never writable: a program could plant a hook or change what git runs"
	case strings.HasPrefix(v.Source, "sandbox-executable's state"):
		return "the helper's own state: never reachable from a sandbox"
	case strings.HasPrefix(v.Source, "--") || strings.Contains(v.Source, ".json: "):
		return "drop that setting to allow it"
	case strings.HasPrefix(v.Source, "default_sensitive_paths") && standalone:
		if op == "write" {
			return "--rw " + entry + " allows it"
		}
		return "--ro " + entry + " allows reading it"
	case strings.HasPrefix(v.Source, "default_sensitive_paths") || strings.HasPrefix(v.Source, "sensitive_paths["):
		return "the policy's sensitive_paths decide it"
	case v.Rule == "outside the writable roots" && standalone:
		return "--rw " + dir + " allows it"
	case v.Rule == "outside the writable roots":
		return "the policy's writable_roots decide it"
	}
	return ""
}

// containsPath reports whether list holds p.
func containsPath(list []string, p string) bool {
	for _, q := range list {
		if filepath.Clean(q) == p {
			return true
		}
	}
	return false
}

// IsProtectedMetadata reports whether a Plan source is the protected
// names' (.git, .vtcode, .codex, .agents, and the hooks git runs).
func IsProtectedMetadata(source string) bool {
	return strings.HasPrefix(source, "protected_metadata")
}
