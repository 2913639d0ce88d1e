package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"golang.org/x/sys/unix"

	"sandbox-executable/spawn"
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

// execError says why the program could not be run in the user's words: the
// name as typed when PATH was searched, and "is a directory" rather than
// the EACCES the kernel gives for one.
func execError(name string, env []string, se *spawn.Error) error {
	path := se.Detail
	switch {
	case se.Errno == unix.ENOENT && !strings.Contains(name, "/"):
		p, ok := lookupEnv(env, "PATH")
		if !ok {
			p = defaultPath
		}
		return fmt.Errorf("exec: %s: not found in PATH (%s)", name, p)
	case se.Errno == unix.EACCES && isDir(path):
		return fmt.Errorf("exec: %s: is a directory", path)
	}
	return se
}

func isDir(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.IsDir()
}
