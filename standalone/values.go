// Package standalone is the vocabulary a person uses to change the
// built-in default: the command line's composing flags (--rw, --ro, --hide,
// --net, --timeout, --memory, --pids, --cpu, --persist-cache,
// --scratch-caches, --allow-git-commit) and the project files that say the
// same in JSON (.sandbox.json in the working directory or a parent, and the
// user's $XDG_CONFIG_HOME/sandbox-executable/config.json). One parser reads both,
// so a setting means the same wherever it is written; the result is a
// policy.Changes and the limits to set, for policy.Resolve.
package standalone

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"sandbox-executable/policy"
)

// parseDuration reads a duration in whole seconds: a Go duration ("90s",
// "10m", "1h30m") or a bare number of seconds. It must be at least a
// second; a fraction is rounded up.
func parseDuration(s string) (uint64, error) {
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		if n == 0 {
			return 0, errors.New("must be at least 1s")
		}
		return n, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, errors.New("not a duration (90s, 10m, 1h30m, or a number of seconds)")
	}
	if d < time.Second {
		return 0, errors.New("must be at least 1s")
	}
	return uint64((d + time.Second - 1) / time.Second), nil
}

// unlimited is the word that lifts a limit (--memory, --pids, --cpu).
const unlimited = "unlimited"

// parseMegabytes reads a size in MB, the policy's unit: a number with a
// suffix K, M, G or T (powers of 1024, an optional "B" or "iB" after it),
// or a bare number of megabytes; "unlimited" is 0.
func parseMegabytes(s string) (uint64, error) {
	if s == unlimited {
		return 0, nil
	}
	t := strings.TrimSuffix(strings.TrimSuffix(strings.ToUpper(s), "B"), "I")
	shift := map[byte]uint{'K': 10, 'M': 20, 'G': 30, 'T': 40}
	unit := uint(20)
	if t != "" {
		if sh, ok := shift[t[len(t)-1]]; ok {
			unit, t = sh, t[:len(t)-1]
		}
	}
	f, err := strconv.ParseFloat(t, 64)
	if err != nil || f <= 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		return 0, errors.New("not a size (512M, 4G, a number of megabytes, or unlimited)")
	}
	mb := math.Ceil(f * math.Exp2(float64(unit)) / (1 << 20))
	if mb > float64(math.MaxInt64>>20) {
		return 0, errors.New("too large")
	}
	return uint64(mb), nil
}

// parseCount reads a positive number of tasks, or "unlimited" (0).
func parseCount(s string) (uint32, error) {
	if s == unlimited {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil || n == 0 {
		return 0, errors.New("not a positive number of tasks (or unlimited)")
	}
	return uint32(n), nil
}

// parseCPU reads a CPU-time budget: a duration, or "unlimited" (0).
func parseCPU(s string) (uint64, error) {
	if s == unlimited {
		return 0, nil
	}
	return parseDuration(s)
}

// netPrefix starts the allowlist form of --net.
const netPrefix = "allow:"

// parseNet reads one --net value: none, loopback, full, or
// allow:HOST[:PORT][,HOST[:PORT]...] (the port 443 when none is given).
func parseNet(s string) (policy.NetworkMode, []policy.HostPort, error) {
	switch s {
	case "none":
		return policy.NetworkNone, nil, nil
	case "loopback":
		return policy.NetworkLoopback, nil, nil
	case "full":
		return policy.NetworkFull, nil, nil
	}
	list, ok := strings.CutPrefix(s, netPrefix)
	if !ok {
		return "", nil, errors.New("not one of none, loopback, full, allow:HOST[:PORT][,...]")
	}
	var out []policy.HostPort
	for _, e := range strings.Split(list, ",") {
		hp, err := policy.ParseHostPort(e)
		if err != nil {
			return "", nil, errors.New(strconv.Quote(e) + ": " + err.Error())
		}
		out = append(out, hp)
	}
	return policy.NetworkAllowlist, out, nil
}
