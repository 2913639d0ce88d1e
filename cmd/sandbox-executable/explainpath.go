package main

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"sandbox-executable/hostfacts"
	"sandbox-executable/mountns"
	"sandbox-executable/supervisor"
)

// explainPathCmd is "sandbox-executable explain [OPTIONS] [--] PATH...":
// for each path, whether a run with these options may read, write and
// execute it, and the rule that decides it, with the flag or policy field
// that would allow it. The run is decided as --explain decides it; nothing
// runs, nothing is written.
func explainPathCmd(args []string) int {
	o, err := parseArgs(args)
	if err != nil {
		return fail(supervisor.ExitSetup, err)
	}
	if o.help || len(o.argv) == 0 {
		fmt.Fprint(os.Stdout, "Usage: sandbox-executable explain [OPTIONS] [--] PATH...\n\nSays, for each PATH, whether a run with OPTIONS (the same as a run's) may\nread, write and execute it, the rule that decides it, and what would allow\nit. Nothing runs.\n")
		if o.help {
			return 0
		}
		return supervisor.ExitSetup
	}
	paths := o.argv
	o.argv, o.explain = []string{"/bin/true"}, true
	inv := &invocation{o: o, out: &outputs{log: slog.New(slog.DiscardHandler), reportFD: -1}}
	go mountns.Probe()
	cfg, err := inv.config()
	if err != nil {
		return fail(supervisor.ExitSetup, err)
	}
	facts := hostfacts.Probe(hostfacts.Options{ReadOnly: true, Overlay: len(cfg.Plan.Filesystem.ScratchCaches) > 0, TempDir: cfg.TempDir})
	pr, err := supervisor.Prepare(cfg, facts)
	if err != nil {
		return fail(supervisor.ExitSetup, err)
	}
	for _, p := range paths {
		abs, err := canonicalPath(p, cfg.Cwd)
		if err != nil {
			return fail(supervisor.ExitSetup, fmt.Errorf("explain: %s: %w", quoteArg(p), err))
		}
		a := pr.Access(abs)
		fmt.Println(abs)
		for _, v := range []struct {
			op string
			v  supervisor.Verdict
		}{{"read", a.Read}, {"write", a.Write}, {"execute", a.Execute}} {
			fmt.Printf("  %-8s %-8s %s\n", v.op, verdictWord(v.v), inv.verdictText(v.op, abs, v.v))
		}
	}
	return 0
}

func verdictWord(v supervisor.Verdict) string {
	if v.Allowed {
		return "allowed"
	}
	return "denied"
}

// verdictText is the rule and, for a denial, what would allow it, in the
// CLI's words.
func (inv *invocation) verdictText(op, path string, v supervisor.Verdict) string {
	s := v.Rule
	if v.Entry != "" && v.Entry != path {
		s += ": " + v.Entry
	}
	if v.Source != "" {
		s += " (" + v.Source
		if v.Given != "" {
			s += " " + v.Given
		}
		s += ")"
	}
	if v.Allowed {
		return s
	}
	standalone := inv.composed != nil && inv.composed.standalone
	entry := v.Entry
	if v.Given != "" {
		entry = v.Given
	}
	switch {
	case v.Source == "protected_metadata" && filepath.Base(v.Entry) == ".git" && standalone:
		return s + "; never writable as a whole: a program could plant a hook or change what git runs; --allow-git-commit makes it writable but for what git runs or loads"
	case supervisor.IsProtectedMetadata(v.Source):
		return s + "; never writable: a program could plant a hook or change what git runs"
	case strings.HasPrefix(v.Source, "sandbox-executable's state"):
		return s + "; the helper's own state: never reachable from a sandbox"
	case strings.HasPrefix(v.Source, "--") || strings.Contains(v.Source, ".json: "):
		return s + "; drop that setting to allow it"
	case strings.HasPrefix(v.Source, "default_sensitive_paths") && standalone:
		if op == "write" {
			return s + "; --rw " + entry + " allows it"
		}
		return s + "; --ro " + entry + " allows reading it"
	case strings.HasPrefix(v.Source, "default_sensitive_paths") || strings.HasPrefix(v.Source, "sensitive_paths["):
		return s + "; the policy's sensitive_paths decide it"
	case v.Rule == "outside the writable roots" && standalone:
		dir := path
		if fi, err := os.Stat(path); err != nil || !fi.IsDir() {
			dir = filepath.Dir(path)
		}
		return s + "; --rw " + dir + " allows it"
	case v.Rule == "outside the writable roots":
		return s + "; the policy's writable_roots decide it"
	}
	return s
}

// canonicalPath is p absolute (from cwd), its existing part with links
// resolved, as the Plan's paths are.
func canonicalPath(p, cwd string) (string, error) {
	if strings.HasPrefix(p, "~/") || p == "~" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		p = filepath.Join(home, strings.TrimPrefix(p, "~"))
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(cwd, p)
	}
	p = filepath.Clean(p)
	var rest []string
	for dir := p; ; dir = filepath.Dir(dir) {
		real, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(append([]string{real}, rest...)...), nil
		}
		if !errors.Is(err, fs.ErrNotExist) || dir == "/" {
			return "", err
		}
		rest = append([]string{filepath.Base(dir)}, rest...)
	}
}
