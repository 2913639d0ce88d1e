package main

import (
	"fmt"
	"strconv"
	"strings"
)

// options is the parsed command line.
type options struct {
	policyCwd      string
	policy         string
	seccompProfile string
	resourceLimits string
	fsMode         string
	cgroupParent   string
	cpuQuota       string
	reportFile     string
	reportFD       string
	logDenials     string
	logLevel       string
	logFormat      string
	logFile        string
	set            map[string]bool // which value options were given

	keepEnv       bool
	keepFDs       []int
	allowDegraded bool
	explain       bool
	help          bool
	version       bool

	// The composing flags (package standalone), each a change to the
	// built-in default; where they came from is kept with each value.
	rw, ro, hide, net             []string
	timeout, memory, pids, cpu    string
	persistCache, gitCommit       bool
	scratchCaches, noProjectFiles bool
	quiet, explainEndings         bool

	argv []string // PROGRAM ARGS...
}

// usagef is a bad command line: one line, exit 125.
func usagef(format string, a ...any) error { return fmt.Errorf(format, a...) }

type optKind int

const (
	optString optKind = iota
	optBool
	optRepeatInt
	optRepeatString
)

type optSpec struct {
	kind optKind
	// output: the option asks for something written while the run runs
	// (a report, a denials log, a log), which the run opens itself.
	output bool
	// dst returns where the value goes.
	str  func(o *options) *string
	flag func(o *options) *bool
	ints func(o *options) *[]int
	strs func(o *options) *[]string
}

var optionSpecs = map[string]optSpec{
	"--sandbox-policy-cwd": {kind: optString, str: func(o *options) *string { return &o.policyCwd }},
	"--sandbox-policy":     {kind: optString, str: func(o *options) *string { return &o.policy }},
	"--seccomp-profile":    {kind: optString, str: func(o *options) *string { return &o.seccompProfile }},
	"--resource-limits":    {kind: optString, str: func(o *options) *string { return &o.resourceLimits }},
	"--fs-mode":            {kind: optString, str: func(o *options) *string { return &o.fsMode }},
	"--cgroup-parent":      {kind: optString, str: func(o *options) *string { return &o.cgroupParent }},
	"--cpu-quota":          {kind: optString, str: func(o *options) *string { return &o.cpuQuota }},
	"--keep-env":           {kind: optBool, flag: func(o *options) *bool { return &o.keepEnv }},
	"--keep-fd":            {kind: optRepeatInt, ints: func(o *options) *[]int { return &o.keepFDs }},
	"--allow-degraded":     {kind: optBool, flag: func(o *options) *bool { return &o.allowDegraded }},
	"--explain":            {kind: optBool, flag: func(o *options) *bool { return &o.explain }},
	"--log-denials":        {kind: optString, output: true, str: func(o *options) *string { return &o.logDenials }},
	"--report-file":        {kind: optString, output: true, str: func(o *options) *string { return &o.reportFile }},
	"--report-fd":          {kind: optString, output: true, str: func(o *options) *string { return &o.reportFD }},
	"--log-level":          {kind: optString, output: true, str: func(o *options) *string { return &o.logLevel }},
	"--log-format":         {kind: optString, output: true, str: func(o *options) *string { return &o.logFormat }},
	"--log-file":           {kind: optString, output: true, str: func(o *options) *string { return &o.logFile }},
	"--rw":                 {kind: optRepeatString, strs: func(o *options) *[]string { return &o.rw }},
	"--ro":                 {kind: optRepeatString, strs: func(o *options) *[]string { return &o.ro }},
	"--hide":               {kind: optRepeatString, strs: func(o *options) *[]string { return &o.hide }},
	"--net":                {kind: optRepeatString, strs: func(o *options) *[]string { return &o.net }},
	"--timeout":            {kind: optString, str: func(o *options) *string { return &o.timeout }},
	"--memory":             {kind: optString, str: func(o *options) *string { return &o.memory }},
	"--pids":               {kind: optString, str: func(o *options) *string { return &o.pids }},
	"--cpu":                {kind: optString, str: func(o *options) *string { return &o.cpu }},
	"--persist-cache":      {kind: optBool, flag: func(o *options) *bool { return &o.persistCache }},
	"--allow-git-commit":   {kind: optBool, flag: func(o *options) *bool { return &o.gitCommit }},
	"--scratch-caches":     {kind: optBool, flag: func(o *options) *bool { return &o.scratchCaches }},
	"--no-project-files":   {kind: optBool, flag: func(o *options) *bool { return &o.noProjectFiles }},
	"--quiet":              {kind: optBool, flag: func(o *options) *bool { return &o.quiet }},
	"-q":                   {kind: optBool, flag: func(o *options) *bool { return &o.quiet }},
	"--explain-endings":    {kind: optBool, flag: func(o *options) *bool { return &o.explainEndings }},
	"--help":               {kind: optBool, flag: func(o *options) *bool { return &o.help }},
	"-h":                   {kind: optBool, flag: func(o *options) *bool { return &o.help }},
	"--version":            {kind: optBool, flag: func(o *options) *bool { return &o.version }},
}

// parseArgs reads the helper's options from args (without argv[0]). Options
// end at "--" or at the first word that does not start with "-": that word
// and everything after it belong to the program, whatever they look like.
// Each option may be given once (--keep-fd may repeat): a second value would
// leave a reader guessing which one holds, so it is an error.
func parseArgs(args []string) (*options, error) {
	o := &options{set: map[string]bool{}}
	i := 0
	for i < len(args) {
		a := args[i]
		if a == "--" {
			i++
			break
		}
		if !strings.HasPrefix(a, "-") || a == "-" {
			break
		}
		name, value, hasValue := strings.Cut(a, "=")
		spec, ok := optionSpecs[name]
		if !ok {
			return nil, usagef("unknown option %s (see --help)", quoteArg(name))
		}
		if spec.kind != optRepeatInt && spec.kind != optRepeatString && o.set[name] {
			return nil, usagef("%s given more than once", name)
		}
		o.set[name] = true
		i++
		switch spec.kind {
		case optBool:
			if hasValue {
				return nil, usagef("%s takes no value", name)
			}
			*spec.flag(o) = true
		case optString, optRepeatInt, optRepeatString:
			if !hasValue {
				if i >= len(args) {
					return nil, usagef("%s needs a value", name)
				}
				value = args[i]
				i++
			}
			if spec.kind == optString || spec.kind == optRepeatString {
				// An empty value would read as the option's absence
				// (--sandbox-policy-cwd= as "use the process's cwd").
				if value == "" {
					return nil, usagef("%s: empty value", name)
				}
				if spec.kind == optRepeatString {
					*spec.strs(o) = append(*spec.strs(o), value)
					break
				}
				*spec.str(o) = value
				break
			}
			n, err := atoiFD(name, value)
			if err != nil {
				return nil, err
			}
			*spec.ints(o) = append(*spec.ints(o), n)
		}
	}
	o.argv = args[i:]
	return o, nil
}

// atoiFD reads a file descriptor number given to option.
func atoiFD(option, value string) (int, error) {
	n, err := strconv.Atoi(value)
	if err != nil || n < 0 {
		return 0, usagef("%s: %s is not a file descriptor number", option, quoteArg(value))
	}
	return n, nil
}

// quoteArg shows a user-supplied word in an error line: quoted, escaped and
// cut short, so a message stays one readable line.
func quoteArg(s string) string {
	const max = 80
	if len(s) > max {
		s = s[:max] + "..."
	}
	return strconv.Quote(s)
}
