package supervisor

import (
	"path/filepath"
	"strings"
)

// defaultPath is what glibc's execvp searches when PATH is unset
// (confstr(_CS_PATH)).
const defaultPath = "/bin:/usr/bin"

// execCandidates lists the paths the child tries, in order, the way execvp
// searches: a name with a slash is used as it is; otherwise every entry of
// the program's PATH (an empty entry meaning the working directory), or
// defaultPath when the program gets no PATH. The search happens in the child,
// so the sandbox's own view of the filesystem decides which one runs.
func execCandidates(name string, env []string) []string {
	if name == "" {
		return nil
	}
	if strings.Contains(name, "/") {
		return []string{name}
	}
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = defaultPath
	}
	dirs := strings.Split(path, ":")
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		if d == "" {
			d = "."
		}
		out = append(out, filepath.Join(d, name))
	}
	return out
}

// lookupEnv finds key in a KEY=VALUE list; the first entry wins, as with
// glibc's getenv.
func lookupEnv(env []string, key string) (string, bool) {
	for _, kv := range env {
		if len(kv) > len(key) && kv[len(key)] == '=' && kv[:len(key)] == key {
			return kv[len(key)+1:], true
		}
	}
	return "", false
}
