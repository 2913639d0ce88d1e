package fsdeps

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// decisionPackages are the packages whose code decides a run (from the
// process's start to the end of supervisor.Prepare), relative to this
// package's directory.
var decisionPackages = []string{
	"../cmd/sandbox-executable", "../policy", "../mountns", "../hostfacts", "../supervisor",
	"../landlock", "../cgroups", "../runstate", "../seccomp",
}

// banned are the calls that read the filesystem around fsdeps, by import
// path.
var banned = map[string][]string{
	"os":            {"Stat", "Lstat", "ReadFile", "ReadDir", "Readlink", "Open", "OpenFile", "Getwd", "DirFS", "OpenRoot", "OpenInRoot"},
	"io/ioutil":     {"ReadFile", "ReadDir"},
	"path/filepath": {"EvalSymlinks", "Glob", "Walk", "WalkDir", "Abs"},
	"golang.org/x/sys/unix": {"Stat", "Lstat", "Fstatat", "Open", "Openat", "Openat2", "Statfs", "Access", "Faccessat",
		"Faccessat2", "Readlink", "Readlinkat", "Statx", "Getdents", "Getwd", "Getcwd"},
	"syscall": {"Stat", "Lstat", "Fstatat", "Open", "Openat", "Statfs", "Access", "Faccessat", "Readlink", "Getdents", "Getwd", "Getcwd"},
	// The password database through NSS: allowed only where the decision
	// is tainted (see taints below).
	"os/user": {"Current", "Lookup", "LookupId", "LookupGroup", "LookupGroupId"},
}

// allowed are the functions of the decision packages that may read the
// filesystem directly, each with why: they run only at run time (after the
// decision), only for doctor, or taint the decision. Keys are
// "package.Func", "package.Type.Method" (pointer receivers too), or
// "package/file.go" for every function of a file.
var allowed = map[string]string{
	// cmd
	"sandbox-executable.passwdHome":     "taints: user.Current through NSS, only when /etc/passwd has no line for the uid",
	"sandbox-executable.openOutputs":    "opens the report and log files the caller named, for writing: nothing decided from them",
	"sandbox-executable/explainpath.go": "explain PATH: the paths asked about, looked up to answer; runs nothing and stores no decision",
	"sandbox-executable.deciderCmd":     "the resident decider's own start: its /proc/self/status, which an asking run's must match (the key covers it); nothing decided from it",
	"sandbox-executable.listenDecider":  "the resident decider's socket, replaced when a dead decider left it: nothing decided from it",
	"sandbox-executable.takeOn":         "the resident decider's own working directory, kept to go back to after a run's decision: nothing decided from it",

	// policy
	"policy.hookGuard.expand": "taints: user.Lookup through NSS for a ~user value in a git config",

	// hostfacts
	"hostfacts/system.go":       "doctor only (Diagnosis.System, Status, CapLastCap)",
	"hostfacts/cgroupaccess.go": "doctor only (Diagnosis.CgroupAccess)",
	"hostfacts/diagnosis.go":    "doctor only (Diagnosis)",
	"hostfacts/cgroupadvice.go": "advice and --explain's forecast only: doctor, a run's refusal, Foresee; no decision stored depends on it",
	"hostfacts.openat2InRoot":   "a kernel feature probe (openat2 RESOLVE_IN_ROOT on /), the boot's answer (boot_id is recorded)",

	// mountns: advice
	"mountns.AppArmorLabel": "the words of a refusal's or degradation's fix only (this process's AppArmor label, when namespaces failed): nothing is decided from it",

	// supervisor: run time
	"supervisor/stale.go":         "run time: stale sweeps",
	"supervisor/denials.go":       "run time: names a denied process's executable",
	"supervisor/userscope.go":     "run time: the user scope asked for when the run's cgroup cannot be made",
	"supervisor/writeback.go":     "run time: --persist-cache writes the run's cache additions back after the program",
	"supervisor/ready.go":         "after the decision: Ready readies the host once (the cgroup's parents, a private temp dir, the host proxy); a stored recipe's runner checks what it needs of it again",
	"supervisor/serve.go":         "run time: serves the run the runner carries out",
	"supervisor.isDir":            "run time: execError words an exec failure",
	"supervisor.execError":        "run time: words an exec failure",
	"supervisor.cgroupfsReadOnly": "run time: cgroupWhy and the user scope, after the cgroup could not be made",
	"supervisor.cgroupWhy":        "run time: why the run's cgroup could not be made",

	// cgroups: everything but the host's detection is run time
	"cgroups/fs.go":        "run time: cgroupfs reads and writes of a run's group",
	"cgroups/group.go":     "run time: the group's cleanup",
	"cgroups/stale.go":     "run time: stale groups",
	"cgroups/v1.go":        "run time: a v1 group's limits and figures",
	"cgroups/v2.go":        "run time: a v2 group's controllers, limits and figures",
	"cgroups/enclosing.go": "run time: the enclosing limits, read when the run's group is made",
	"cgroups/recipe.go":    "after the decision: Ready makes the parents a run's group goes in (the runner checks them again), Attach finds a run's group for its figures",

	// seccomp
	"seccomp.Cache.load": "the compiled-filter cache: authenticated content, and the program is the same compiled or loaded",
	"seccomp/notify.go":  "run time: names a denied process's executable",
}

// procSelfReaders are the functions that read this process's own /proc
// files unrecorded (ReadProcSelf, ReadlinkProcSelf), each with the
// key-covered fact it reads: a new one must be added here, consciously.
var procSelfReaders = map[string]string{
	"sandbox-executable.terminalDevices": "/proc/self/fd/0-2: the stdio descriptors",
	"mountns.selfStatus":                 "/proc/self/status: CapEff and Seccomp (capabilities, seccomp mode)",
	"supervisor.effectiveCap":            "/proc/self/status: CapEff (capabilities)",
	"cgroups.Detect":                     "/proc/self/cgroup: this process's cgroups",
}

// taintCallers are the functions of the decision packages that call
// Taint, each with what it cannot record.
var taintCallers = map[string]string{
	"sandbox-executable.passwdHome": "user.Current through NSS",
	"policy.hookGuard.expand":       "user.Lookup through NSS",
	"mountns.probeNow":              "a namespace trial (a clone)",
}

// taints are the allowed functions that must call Taint (they read what no
// dependency can check).
var taints = []string{"sandbox-executable.passwdHome", "policy.hookGuard.expand"}

// TestDecisionReadsThroughFsdeps fails when decision code reads the
// filesystem around fsdeps: every read it makes must be recorded (or taint
// the decision), or the recipe would be replayed after what it read changed.
func TestDecisionReadsThroughFsdeps(t *testing.T) {
	used := map[string]bool{}
	var bad []string
	calledTaint := map[string]bool{}
	procSelfSeen := map[string]bool{}
	var indirect []string
	for _, dir := range decisionPackages {
		g := &callGraph{calls: map[string][]string{}, direct: map[string]string{}, file: map[string]string{}, names: map[string][]string{}}
		fset := token.NewFileSet()
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil {
			t.Fatal(err)
		}
		if len(files) == 0 {
			t.Fatalf("%s: no Go files", dir)
		}
		for _, file := range files {
			if strings.HasSuffix(file, "_test.go") {
				continue
			}
			f, err := parser.ParseFile(fset, file, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			pkg := f.Name.Name
			if pkg == "main" {
				pkg = filepath.Base(dir)
			}
			fileKey := pkg + "/" + filepath.Base(file)
			imports := map[string]string{} // local name -> import path
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				name := p[strings.LastIndex(p, "/")+1:]
				if imp.Name != nil {
					name = imp.Name.Name
				}
				imports[name] = p
			}
			check := func(fn string, n ast.Node) {
				ast.Inspect(n, func(n ast.Node) bool {
					sel, ok := n.(*ast.SelectorExpr)
					if !ok {
						return true
					}
					id, ok := sel.X.(*ast.Ident)
					if !ok {
						return true
					}
					if imports[id.Name] == "sandbox-executable/fsdeps" {
						switch sel.Sel.Name {
						case "Taint":
							calledTaint[fn] = true
							if taintCallers[fn] == "" {
								bad = append(bad, fset.Position(sel.Pos()).String()+": "+fn+" taints the decision: add it to taintCallers with why")
							}
						case "ReadProcSelf", "ReadlinkProcSelf":
							procSelfSeen[fn] = true
							if procSelfReaders[fn] == "" {
								bad = append(bad, fset.Position(sel.Pos()).String()+": "+fn+" reads this process's own /proc unrecorded: add it to procSelfReaders with the key-covered fact it reads")
							}
						}
					}
					for _, b := range banned[imports[id.Name]] {
						if sel.Sel.Name != b {
							continue
						}
						if g.direct[fn] == "" {
							g.direct[fn] = imports[id.Name] + "." + b
						}
						switch {
						case allowed[fn] != "":
							used[fn] = true
						case allowed[fileKey] != "":
							used[fileKey] = true
						default:
							bad = append(bad, fset.Position(sel.Pos()).String()+": "+fn+" calls "+imports[id.Name]+"."+b)
						}
					}
					return true
				})
			}
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					k := funcKey(pkg, d)
					check(k, d)
					g.add(k, fileKey, d, imports)
				case *ast.GenDecl:
					check(pkg+".<package-level>", d)
				}
			}
		}
		indirect = append(indirect, g.unlisted(used)...)
	}
	for _, s := range indirect {
		t.Error(s)
	}
	sort.Strings(bad)
	for _, b := range bad {
		t.Error(b)
	}
	for _, fn := range taints {
		if !calledTaint[fn] {
			t.Errorf("%s reads what no dependency can check but does not call fsdeps.Taint", fn)
		}
	}
	for k := range procSelfReaders {
		if !procSelfSeen[k] {
			t.Errorf("procSelfReaders entry %s does not read /proc/self: remove it", k)
		}
	}
	for k := range taintCallers {
		if !calledTaint[k] {
			t.Errorf("taintCallers entry %s does not taint: remove it", k)
		}
	}
	for k := range allowed {
		if !used[k] {
			t.Errorf("allowlist entry %s is not used: remove it", k)
		}
	}
}

// callGraph is a package's functions and what each refers to, by name
// (a method by its name alone, whatever its receiver: an over-estimate).
type callGraph struct {
	calls  map[string][]string // function -> names it refers to
	direct map[string]string   // function -> a banned call it makes
	file   map[string]string   // function -> its file's allowlist key
	names  map[string][]string // name -> functions of that name
	pkg    string
}

func (g *callGraph) add(k, fileKey string, d *ast.FuncDecl, imports map[string]string) {
	g.pkg = k[:strings.IndexByte(k, '.')]
	g.file[k] = fileKey
	name := d.Name.Name
	if d.Recv != nil {
		name = "." + name // a method: found through a selector only
	}
	g.names[name] = append(g.names[name], k)
	ref := func(e ast.Expr) {
		switch e := e.(type) {
		case *ast.Ident:
			g.calls[k] = append(g.calls[k], e.Name)
		case *ast.SelectorExpr:
			if id, ok := e.X.(*ast.Ident); ok && imports[id.Name] != "" {
				return // another package's
			}
			g.calls[k] = append(g.calls[k], "."+e.Sel.Name)
		}
	}
	ast.Inspect(d.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.CallExpr:
			// What is called, and functions or methods passed as values.
			ref(n.Fun)
			for _, a := range n.Args {
				ref(a)
			}
		case *ast.CompositeLit:
			for _, e := range n.Elts {
				ref(e)
			}
		}
		return true
	})
}

// propagates says whether an allowed function's reads make its callers'
// reads too: run-time and doctor-only code must not be called by the
// decision; a function that taints, or whose read is safe for another
// reason, may be.
func propagates(reason string) bool {
	return strings.HasPrefix(reason, "run time") || strings.HasPrefix(reason, "doctor")
}

// skippedCalls are calls from the decision to run-time or doctor-only code
// that do not read when the decision makes them.
var skippedCalls = map[string]string{
	"hostfacts.probeHost -> hostfacts.startDiagnosis": "only with Options.Doctor (doctor's own probe)",
}

// unlisted returns the functions that reach a run-time or doctor-only
// read through functions of their own package without being allowed
// themselves: an allowlisted helper called from decision code would read
// unrecorded.
func (g *callGraph) unlisted(used map[string]bool) []string {
	via := map[string]string{} // function -> how it reaches a read
	for k, b := range g.direct {
		reason := allowed[k]
		if reason == "" {
			reason = allowed[g.file[k]]
		}
		if reason == "" || propagates(reason) {
			via[k] = b
		}
	}
	for changed := true; changed; {
		changed = false
		for k, names := range g.calls {
			if via[k] != "" {
				continue
			}
			for _, n := range names {
				for _, callee := range g.names[n] {
					if callee != k && via[callee] != "" && skippedCalls[k+" -> "+callee] == "" {
						via[k] = callee + " -> " + via[callee]
						changed = true
						break
					}
				}
				if via[k] != "" {
					break
				}
			}
		}
	}
	var out []string
	for k, how := range via {
		switch {
		case allowed[k] != "":
			used[k] = true
		case allowed[g.file[k]] != "":
			used[g.file[k]] = true
		default:
			out = append(out, k+" reaches "+how)
		}
	}
	sort.Strings(out)
	return out
}

// funcKey names a function declaration: "pkg.Func" or "pkg.Type.Method".
func funcKey(pkg string, d *ast.FuncDecl) string {
	if d.Recv == nil || len(d.Recv.List) == 0 {
		return pkg + "." + d.Name.Name
	}
	t := d.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	if ix, ok := t.(*ast.IndexExpr); ok {
		t = ix.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return pkg + "." + id.Name + "." + d.Name.Name
	}
	return pkg + ".?." + d.Name.Name
}
