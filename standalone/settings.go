package standalone

import (
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"sandbox-executable/policy"
)

// Value is one setting as written, with where it came from (From: "--rw",
// "/home/me/code/.sandbox.json: rw[0]") and the directory a relative path
// in it is taken from (the working directory for a flag, the file's own
// directory for a project file).
type Value struct {
	Text string
	From string
	Dir  string
}

// Settings are the vocabulary's settings, each list in the order given.
// A later source overrides an earlier one's single values and adds to its
// lists (Merge).
type Settings struct {
	RW, RO, Hide []Value
	Net          []Value
	Timeout      *Value
	Memory       *Value
	Pids         *Value
	CPU          *Value
	PersistCache *Value
	// ScratchCaches gives a given policy the built-in default's scratch
	// caches (the default has them anyway).
	ScratchCaches *Value
	// GitCommit makes the git directory of each writable root's
	// repository writable but for what git runs or loads
	// (policy.Changes.GitCommit).
	GitCommit *Value
}

// Merge returns s with over on top: over's lists after s's, over's single
// values instead of s's. A --net of over replaces s's whole network.
func (s Settings) Merge(over Settings) Settings {
	out := s
	out.RW = append(append([]Value(nil), s.RW...), over.RW...)
	out.RO = append(append([]Value(nil), s.RO...), over.RO...)
	out.Hide = append(append([]Value(nil), s.Hide...), over.Hide...)
	if len(over.Net) > 0 {
		out.Net = over.Net
	}
	for _, p := range []struct{ dst, src **Value }{
		{&out.Timeout, &over.Timeout}, {&out.Memory, &over.Memory}, {&out.Pids, &over.Pids}, {&out.CPU, &over.CPU},
		{&out.PersistCache, &over.PersistCache}, {&out.ScratchCaches, &over.ScratchCaches}, {&out.GitCommit, &over.GitCommit},
	} {
		if *p.src != nil {
			*p.dst = *p.src
		}
	}
	return out
}

// Limit is a resource limit a setting asks for, in the policy's unit
// (MB, tasks, seconds; 0 unlimited).
type Limit struct {
	Value uint64
	From  string
}

// Decided is what the settings ask for, checked: the changes to the
// policy's paths and network, the limits, and the switches.
type Decided struct {
	Changes policy.Changes
	// Memory (MB), Pids, CPU and Timeout (seconds), each nil when not set.
	Memory, Pids, CPU, Timeout *Limit
	// PersistCache and ScratchCaches are where each was asked for, ""
	// when it was not.
	PersistCache, ScratchCaches string
}

// Decide checks every setting and turns it into what policy.Resolve takes.
// Each error names the setting's source.
func (s Settings) Decide() (*Decided, error) {
	d := &Decided{}
	paths := func(list []Value) ([]policy.ChangedPath, error) {
		var out []policy.ChangedPath
		for _, v := range list {
			p, err := absPath(v)
			if err != nil {
				return nil, err
			}
			out = append(out, policy.ChangedPath{Path: p, From: v.From})
		}
		return out, nil
	}
	var err error
	if d.Changes.Writable, err = paths(s.RW); err != nil {
		return nil, err
	}
	if d.Changes.ReadOnly, err = paths(s.RO); err != nil {
		return nil, err
	}
	if d.Changes.Hidden, err = paths(s.Hide); err != nil {
		return nil, err
	}
	if d.Changes.Net, err = decideNet(s.Net); err != nil {
		return nil, err
	}
	limit := func(v *Value, parse func(string) (uint64, error)) (*Limit, error) {
		if v == nil {
			return nil, nil
		}
		n, err := parse(v.Text)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", v.From, strconv.Quote(v.Text), err)
		}
		return &Limit{Value: n, From: v.From}, nil
	}
	if d.Memory, err = limit(s.Memory, parseMegabytes); err != nil {
		return nil, err
	}
	if d.Pids, err = limit(s.Pids, func(t string) (uint64, error) { n, err := parseCount(t); return uint64(n), err }); err != nil {
		return nil, err
	}
	if d.CPU, err = limit(s.CPU, parseCPU); err != nil {
		return nil, err
	}
	if d.Timeout, err = limit(s.Timeout, parseDuration); err != nil {
		return nil, err
	}
	for _, sw := range []struct {
		v   *Value
		dst *string
	}{{s.PersistCache, &d.PersistCache}, {s.ScratchCaches, &d.ScratchCaches}, {s.GitCommit, &d.Changes.GitCommit}} {
		if sw.v != nil && sw.v.Text == "true" {
			*sw.dst = sw.v.From
		}
	}
	return d, nil
}

// absPath is a path setting made absolute: "~" and "~/..." stay for
// policy.Resolve to expand; a relative path is taken from v.Dir.
func absPath(v Value) (string, error) {
	p := v.Text
	if p == "" {
		return "", fmt.Errorf("%s: an empty path", v.From)
	}
	if p == "~" || strings.HasPrefix(p, "~/") || filepath.IsAbs(p) {
		return p, nil
	}
	if !filepath.IsAbs(v.Dir) {
		return "", fmt.Errorf("%s: %s is relative, and the directory it is relative to is unknown", v.From, strconv.Quote(p))
	}
	return filepath.Join(v.Dir, p), nil
}

// decideNet reads the --net values: one mode, or any number of allow:
// lists, whose hosts add up.
func decideNet(vals []Value) (*policy.NetChange, error) {
	var out *policy.NetChange
	first := ""
	for _, v := range vals {
		mode, hosts, err := parseNet(v.Text)
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", v.From, strconv.Quote(v.Text), err)
		}
		switch {
		case out == nil:
			first = v.Text
			out = &policy.NetChange{Mode: mode, Allow: hosts, From: v.From + " " + v.Text}
		case mode == policy.NetworkAllowlist && out.Mode == policy.NetworkAllowlist:
			out.Allow = append(out.Allow, hosts...)
			out.From += ", " + v.Text
		case mode != out.Mode:
			return nil, fmt.Errorf("%s: %s and %s: give one network mode (allow: lists add up)", v.From, strconv.Quote(first), strconv.Quote(v.Text))
		}
	}
	return out, nil
}
