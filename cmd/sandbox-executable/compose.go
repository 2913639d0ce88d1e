package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"sandbox-executable/fsdeps"
	"sandbox-executable/hostfacts"
	"sandbox-executable/policy"
	"sandbox-executable/seccomp"
	"sandbox-executable/standalone"
)

// composed is what the command line and the settings files decided
// besides the Plan.
type composed struct {
	// standalone: no --sandbox-policy, so the built-in default with the
	// composing flags and the settings files on it.
	standalone bool
	// files are the settings files found, each used or ignored.
	files []standalone.File
	// notes are lines for stderr (the standalone form, unless --quiet):
	// a settings file ignored, and why.
	notes []string
	// decided are the settings in force.
	decided *standalone.Decided
}

// resolvePlan decodes the three JSON arguments, the composing flags and
// (without a policy) the settings files, and resolves them into a Plan.
// A settings file that lies in a writable root of the run it would
// configure is ignored (a program could have written it to widen its next
// run), and the run is resolved again without it.
func resolvePlan(o *options) (*policy.Plan, *composed, error) {
	cwd, err := fsdeps.Getwd()
	if err != nil {
		return nil, nil, fmt.Errorf("working directory: %w", err)
	}
	c := &composed{standalone: !o.set["--sandbox-policy"]}
	flags := flagSettings(o, cwd)
	if c.standalone && !o.noProjectFiles {
		dir := cwd
		if o.policyCwd != "" {
			dir = o.policyCwd
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(cwd, dir)
			}
		}
		home := os.Getenv("HOME")
		if !filepath.IsAbs(home) {
			home, _ = passwdHome()
		}
		if c.files, err = standalone.Find(dir, home, os.Getenv("XDG_CONFIG_HOME")); err != nil {
			return nil, nil, err
		}
	}
	for {
		settings := standalone.Settings{}
		for _, f := range c.files {
			if f.Ignored == "" {
				settings = settings.Merge(f.Settings)
			}
		}
		settings = settings.Merge(flags)
		plan, err := c.resolve(o, cwd, settings)
		if err != nil {
			return nil, nil, err
		}
		again := false
		for i := range c.files {
			f := &c.files[i]
			if f.Ignored != "" {
				continue
			}
			if root := f.InRoot(plan); root != "" {
				f.Ignored = "it lies in the writable root " + root + " of this run, where a sandboxed program could have written it (put it in a parent directory of the roots, or in ~/.config/sandbox-executable/config.json)"
				again = true
			}
		}
		if again {
			continue // ignoring a file only takes roots away
		}
		for _, f := range c.files {
			if f.Ignored != "" {
				c.notes = append(c.notes, "note: "+f.Path+" ignored: "+f.Ignored)
				plan.Settings = append(plan.Settings, f.Path+": ignored: "+f.Ignored)
			} else {
				plan.Settings = append(plan.Settings, f.Path+": used")
			}
		}
		return plan, c, nil
	}
}

// flagSettings are the composing flags as settings.
func flagSettings(o *options, cwd string) standalone.Settings {
	var s standalone.Settings
	list := func(flag string, vals []string) []standalone.Value {
		var out []standalone.Value
		for _, v := range vals {
			out = append(out, standalone.Value{Text: v, From: flag, Dir: cwd})
		}
		return out
	}
	s.RW, s.RO, s.Hide, s.Net = list("--rw", o.rw), list("--ro", o.ro), list("--hide", o.hide), list("--net", o.net)
	one := func(flag, v string) *standalone.Value {
		if !o.set[flag] {
			return nil
		}
		return &standalone.Value{Text: v, From: flag, Dir: cwd}
	}
	s.Timeout, s.Memory, s.Pids, s.CPU = one("--timeout", o.timeout), one("--memory", o.memory), one("--pids", o.pids), one("--cpu", o.cpu)
	s.PersistCache, s.ScratchCaches = one("--persist-cache", "true"), one("--scratch-caches", "true")
	s.GitCommit = one("--allow-git-commit", "true")
	return s
}

// resolve resolves the policy (the built-in default without one) with
// the settings on it.
func (c *composed) resolve(o *options, cwd string, settings standalone.Settings) (*policy.Plan, error) {
	d, err := settings.Decide()
	if err != nil {
		return nil, err
	}
	c.decided = d
	host := hostfacts.Size()
	pol := policy.DefaultStandalone(cwd, host)
	if !c.standalone {
		data, err := argValue("--sandbox-policy", o.policy)
		if err != nil {
			return nil, err
		}
		if pol, err = policy.DecodePolicy(data); err != nil {
			return nil, policy.WithArg(err, "--sandbox-policy")
		}
		if err := onlyNarrowing(d, pol); err != nil {
			return nil, err
		}
	}
	in := policy.Input{
		Policy:      *pol,
		Seccomp:     pol.DerivedSeccompProfile(),
		Limits:      pol.DerivedResourceLimits(),
		SeccompFrom: policy.SourcePolicy,
		LimitsFrom:  policy.SourcePolicy,
		Names:       flagOf,
		PolicyCwd:   o.policyCwd,
		Environ:     os.Environ(),
		KeepEnv:     o.keepEnv,
		Syscalls:    seccomp.Table{},
		PasswdHome:  passwdHome,
		// The built-in default suits a build: its caches are writable
		// throwaway copies. A caller's policy gets exactly what it says,
		// unless --scratch-caches asks for them.
		Standalone: c.standalone || d.ScratchCaches != "",
		Changes:    &d.Changes,
	}
	if pol.Kind == policy.KindReadOnly {
		// read_only's derived values are computed, not embedded: an
		// error in them is not the policy's.
		in.SeccompFrom, in.LimitsFrom = policy.SourceDerivedSeccomp, policy.SourceDerivedLimits
	}
	if o.set["--seccomp-profile"] {
		data, err := argValue("--seccomp-profile", o.seccompProfile)
		if err != nil {
			return nil, err
		}
		s, err := policy.DecodeSeccompProfile(data)
		if err != nil {
			return nil, policy.WithArg(err, "--seccomp-profile")
		}
		if pol.GaveSeccomp && !sameProfile(*s, pol.SeccompProfile) {
			return nil, errors.New("--seccomp-profile: differs from the policy's own seccomp_profile; VT Code sends one value twice, so refusing rather than guessing which holds")
		}
		in.Seccomp, in.SeccompFrom = *s, policy.SourceSeccompProfile
	} else if !c.standalone && pol.Kind == policy.KindWorkspaceWrite && !pol.GaveSeccomp && (pol.NetworkAccess || len(pol.NetworkAllowlist) > 0) {
		// serde always writes seccomp_profile: only a hand-written
		// policy lacks it, and its default would quietly take the
		// network it asks for away.
		return nil, errors.New(`--sandbox-policy: the policy allows network access but has no seccomp_profile, whose default (the strict profile) allows no network sockets, so the run would have no network: add "seccomp_profile":{"allow_network_sockets":true}, or drop the network`)
	}
	var given map[string]json.RawMessage
	if o.set["--resource-limits"] {
		data, err := argValue("--resource-limits", o.resourceLimits)
		if err != nil {
			return nil, err
		}
		l, err := policy.DecodeResourceLimits(data)
		if err != nil {
			return nil, policy.WithArg(err, "--resource-limits")
		}
		if pol.GaveLimits && *l != pol.ResourceLimits {
			return nil, errors.New("--resource-limits: differs from the policy's own resource_limits; VT Code sends one value twice, so refusing rather than guessing which holds")
		}
		in.Limits, in.LimitsFrom = *l, policy.SourceResourceLimits
		// Decoded strictly above: the keys are known and unique.
		_ = json.Unmarshal(data, &given)
	}
	var notes []string
	if c.standalone {
		in.Changes.LiftDefaults = true
		notes = append(notes, standaloneLimits(&in, pol, given, host)...)
		if err := standaloneNet(&in, o); err != nil {
			return nil, err
		}
	}
	more, err := applyLimits(&in, d, c.standalone)
	if err != nil {
		return nil, err
	}
	in.ProcessCwd = cwd
	in.TerminalDevices = terminalDevices()
	plan, err := policy.Resolve(in)
	if err != nil {
		return nil, err
	}
	plan.Notes = append(plan.Notes, append(notes, more...)...)
	plan.Filesystem.PersistCaches = d.PersistCache
	if c.standalone {
		plan.Settings = append(plan.Settings, fmt.Sprintf("the built-in default (no --sandbox-policy), its limits for this host (%d CPUs, %d MB of memory)", host.CPUs, host.MemoryBytes>>20))
	}
	for _, f := range []struct{ on, what string }{{d.PersistCache, "persist_cache"}, {d.ScratchCaches, "scratch_caches"}, {d.Changes.GitCommit, "allow_git_commit"}} {
		if f.on != "" {
			plan.Settings = append(plan.Settings, f.on+": "+f.what)
		}
	}
	return plan, nil
}

// onlyNarrowing refuses, with a given policy, the settings that would
// widen it: the policy is its caller's word, and the flags may only add to
// what it forbids (--hide, --ro inside a root, --net none, tighter limits).
// The scratch caches (--scratch-caches) write nothing of the host's.
func onlyNarrowing(d *standalone.Decided, pol *policy.SandboxPolicy) error {
	refuse := func(from, what string) error {
		return fmt.Errorf("%s: %s; with --sandbox-policy a flag may only narrow the policy (--hide, --ro, --net none, lower limits): write it in the policy, or drop --sandbox-policy to build on the built-in default", from, what)
	}
	if len(d.Changes.Writable) > 0 {
		return refuse(d.Changes.Writable[0].From, "would add a writable root")
	}
	if n := d.Changes.Net; n != nil && n.Mode != policy.NetworkNone {
		return refuse(n.From, "would change the policy's network (network_access, network_allowlist)")
	}
	if d.PersistCache != "" {
		return refuse(d.PersistCache, "would write the run's build caches back to the host's")
	}
	if d.Changes.GitCommit != "" {
		return refuse(d.Changes.GitCommit, "would make the repository's .git writable")
	}
	return nil
}

// standaloneLimits sets the built-in default's limits: a --resource-limits
// given without a policy changes only the fields it names (VT Code's serde
// reading, where a missing field is 0, unlimited, holds for VT Code's
// form: with a policy).
func standaloneLimits(in *policy.Input, pol *policy.SandboxPolicy, given map[string]json.RawMessage, host policy.HostSize) []string {
	if given == nil {
		return nil
	}
	l := in.Limits
	in.Limits = pol.ResourceLimits
	var kept []string
	for _, f := range []struct {
		key string
		set func()
	}{
		{"max_memory_mb", func() { in.Limits.MaxMemoryMB = l.MaxMemoryMB }},
		{"max_pids", func() { in.Limits.MaxPids = l.MaxPids }},
		{"max_disk_mb", func() { in.Limits.MaxDiskMB = l.MaxDiskMB }},
		{"cpu_time_secs", func() { in.Limits.CPUTimeSecs = l.CPUTimeSecs }},
		{"timeout_secs", func() { in.Limits.TimeoutSecs = l.TimeoutSecs }},
	} {
		if _, ok := given[f.key]; ok {
			f.set()
		} else {
			kept = append(kept, f.key)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	return []string{"--resource-limits without a policy changes only the fields it gives; " + strings.Join(kept, ", ") + " keep the built-in default's."}
}

// standaloneNet gives the built-in default its network: the settings'
// --net, else loopback; a mode with sockets needs the profile to allow
// them (the strict one is widened for it; a --seccomp-profile that
// forbids them narrows the default to none, and refuses a --net).
func standaloneNet(in *policy.Input, o *options) error {
	ch := in.Changes
	asked := ch.Net != nil
	if !asked {
		ch.Net = policy.StandaloneNet()
	}
	if ch.Net.Mode == policy.NetworkNone || in.Seccomp.AllowNetworkSockets {
		return nil
	}
	if o.set["--seccomp-profile"] {
		if asked {
			return fmt.Errorf("%s: needs network sockets, and --seccomp-profile has allow_network_sockets false", ch.Net.From)
		}
		return nil // the default's loopback narrows to none, with a note
	}
	in.Seccomp.AllowNetworkSockets = true
	return nil
}

// applyLimits sets the limits the settings ask for. With a given policy
// a limit may only be tightened (0 is unlimited; a timeout of 0 is VT
// Code's default, 300 s).
func applyLimits(in *policy.Input, d *standalone.Decided, standaloneMode bool) ([]string, error) {
	var notes []string
	for _, f := range []struct {
		lim   *standalone.Limit
		field string
		cur   uint64
		set   func(uint64)
	}{
		{d.Memory, "max_memory_mb", in.Limits.MaxMemoryMB, func(v uint64) { in.Limits.MaxMemoryMB = v }},
		{d.Pids, "max_pids", uint64(in.Limits.MaxPids), func(v uint64) { in.Limits.MaxPids = uint32(v) }},
		{d.CPU, "cpu_time_secs", in.Limits.CPUTimeSecs, func(v uint64) { in.Limits.CPUTimeSecs = v }},
		{d.Timeout, "timeout_secs", in.Limits.TimeoutSecs, func(v uint64) { in.Limits.TimeoutSecs = v }},
	} {
		if f.lim == nil {
			continue
		}
		if !standaloneMode {
			cur := f.cur
			if f.field == "timeout_secs" && cur == 0 {
				cur = policy.DefaultTimeoutSecs
			}
			if cur != 0 && (f.lim.Value == 0 || f.lim.Value > cur) {
				return nil, fmt.Errorf("%s: %s %s is wider than the policy's %s %d; with --sandbox-policy a limit may only be tightened", f.lim.From, f.field, limitText(f.lim.Value), f.field, cur)
			}
		}
		f.set(f.lim.Value)
		notes = append(notes, f.field+" "+limitText(f.lim.Value)+": "+f.lim.From+".")
	}
	return notes, nil
}

// limitText is a limit's value, 0 said as unlimited.
func limitText(v uint64) string {
	if v == 0 {
		return "unlimited"
	}
	return strconv.FormatUint(v, 10)
}

// notesLine is the settings' notes (a settings file ignored, and why) as
// the lines the run says as it starts: in the standalone form, unless
// --quiet; --explain shows them in plan.settings instead. They are part
// of the recipe (spawn.Recipe.Say), so that a warm run says them too.
func (inv *invocation) notesLine() string {
	if inv.composed == nil || !inv.composed.standalone || inv.o.quiet || inv.o.explain {
		return ""
	}
	lines := make([]string, len(inv.composed.notes))
	for i, n := range inv.composed.notes {
		lines[i] = prog + ": " + n
	}
	return strings.Join(lines, "\n")
}
