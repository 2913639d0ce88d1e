package policy

import (
	"errors"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// environ looks variables up in a KEY=VALUE list the way getenv(3) does:
// the first entry with the name wins.
type environ []string

// lookup returns the value of name and whether it is set.
func (e environ) lookup(name string) (string, bool) {
	for _, kv := range e {
		if k, v, ok := strings.Cut(kv, "="); ok && k == name {
			return v, true
		}
	}
	return "", false
}

// homeDir returns the home directory used to expand "~": $HOME when it is
// non-empty and absolute, else the password database's entry (VT Code's
// dirs::home_dir and VtCodePaths read it this way).
func homeDir(env environ, passwdHome func() (string, error)) (string, error) {
	if h, _ := env.lookup("HOME"); h != "" && filepath.IsAbs(h) {
		return h, nil
	}
	if passwdHome == nil {
		return "", errors.New("$HOME is unset, empty or relative and the password database is not available")
	}
	h, err := passwdHome()
	if err != nil {
		return "", errors.New("$HOME is unset, empty or relative and the password database gave no home: " + escapeText(err.Error(), 0, maxPathEcho))
	}
	if h == "" || !filepath.IsAbs(h) {
		return "", errors.New("$HOME is unset, empty or relative and the password database's home " + quote(h) + " is not absolute")
	}
	return h, nil
}

// expandTilde expands "~" and "~/rest" to the home directory (computed on
// demand by home); any other path is returned as it is.
func expandTilde(p string, home func() (string, error)) (string, error) {
	if p != "~" && !strings.HasPrefix(p, "~/") {
		return p, nil
	}
	h, err := home()
	if err != nil {
		return "", err
	}
	return rustJoin(h, strings.TrimPrefix(strings.TrimPrefix(p, "~"), "/")), nil
}

// rustJoin joins a path to base the way Rust's Path::join does: an
// absolute rel replaces base ("~//etc/x" is /etc/x for VT Code), a
// separator is added only when base does not end with one, and an empty
// rel leaves base unchanged.
func rustJoin(base, rel string) string {
	if rel == "" {
		return base
	}
	if strings.HasPrefix(rel, "/") {
		return rel
	}
	if strings.HasSuffix(base, "/") {
		return base + rel
	}
	return base + "/" + rel
}

// defaultHomeSensitive are the 17 "~/..." entries of VT Code's
// default_sensitive_paths() (CONTRACT §6), in its order.
var defaultHomeSensitive = []string{
	"~/.ssh", "~/.aws", "~/.config/gcloud", "~/.azure", "~/.kube", "~/.docker",
	"~/.npmrc", "~/.pypirc", "~/.config/gh", "~/.secrets", "~/.gnupg", "~/.config/op",
	"~/.vault-token", "~/.terraform.d/credentials.tfrc.json", "~/.cargo/credentials.toml",
	"~/.git-credentials", "~/.netrc",
}

// defaultSensitivePaths returns VT Code's default_sensitive_paths(): the 17
// "~/..." entries, then VT Code's own directories resolved from env
// (CONTRACT §10), each added only if the same string is not already there.
// Every entry blocks reading and writing.
//
// Where VT Code's directory resolution fails, VT Code falls back to denying
// reads of "/". Nothing can run under such a sandbox, so this returns an
// error saying why instead.
func defaultSensitivePaths(env environ, passwdHome func() (string, error)) ([]string, error) {
	dirs, err := vtcodeDirs(env, passwdHome)
	if err != nil {
		return nil, errors.New("cannot compute VT Code's default sensitive paths: " + err.Error() +
			"; VT Code would then deny reading / (the whole filesystem), under which no program can run, so refusing")
	}
	list := append([]string(nil), defaultHomeSensitive...)
	for _, d := range dirs {
		if !containsString(list, d) {
			list = append(list, d)
		}
	}
	return list, nil
}

// vtcodeDirs resolves VT Code's own directories on Linux from env, in the
// order of vtcode_sensitive_paths: config, config/auth, data, state, cache,
// runtime, executable, legacy (VtCodePaths::from_environment_os).
func vtcodeDirs(env environ, passwdHome func() (string, error)) ([]string, error) {
	home, err := homeDir(env, passwdHome)
	if err != nil {
		return nil, err
	}
	legacy := rustJoin(home, ".vtcode")
	if v, ok := envPath(env, "VTCODE_HOME"); ok {
		if !filepath.IsAbs(v) {
			return nil, errors.New("VTCODE_HOME must be an absolute path, got " + quote(v))
		}
		legacy = v
	}
	config := xdgAppDir(env, "XDG_CONFIG_HOME", rustJoin(home, ".config/vtcode"))
	if v, ok := envPath(env, "VTCODE_CONFIG"); ok {
		if !filepath.IsAbs(v) {
			return nil, errors.New("VTCODE_CONFIG must be an absolute path, got " + quote(v))
		}
		config = v
	}
	data := xdgAppDir(env, "XDG_DATA_HOME", rustJoin(home, ".local/share/vtcode"))
	if v, ok := envPath(env, "VTCODE_DATA"); ok {
		if !filepath.IsAbs(v) {
			return nil, errors.New("VTCODE_DATA must be an absolute path, got " + quote(v))
		}
		data = v
	}
	state := xdgAppDir(env, "XDG_STATE_HOME", rustJoin(home, ".local/state/vtcode"))
	cache := xdgAppDir(env, "XDG_CACHE_HOME", rustJoin(home, ".cache/vtcode"))
	runtime := xdgAppDir(env, "XDG_RUNTIME_DIR", rustJoin(state, "runtime"))
	executable := rustJoin(home, ".local/bin")
	if v, ok := envPath(env, "XDG_BIN_HOME"); ok && filepath.IsAbs(v) {
		executable = v
	}
	return []string{config, rustJoin(config, "auth"), data, state, cache, runtime, executable, legacy}, nil
}

// envPath returns a variable's value for VT Code's path resolution: it
// counts only when non-empty after trimming white space, and the trimmed
// value is used (values that are not UTF-8 are used as they are).
func envPath(env environ, name string) (string, bool) {
	v, ok := env.lookup(name)
	if !ok || v == "" {
		return "", false
	}
	if utf8.ValidString(v) {
		v = strings.TrimSpace(v)
	}
	return v, v != ""
}

// xdgAppDir is $name/vtcode when that variable is set and absolute, else
// fallback.
func xdgAppDir(env environ, name, fallback string) string {
	if v, ok := envPath(env, name); ok && filepath.IsAbs(v) {
		return rustJoin(v, "vtcode")
	}
	return fallback
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
