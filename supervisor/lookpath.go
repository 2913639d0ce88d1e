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
// searches (spawn.ExecPaths over pathDirs). The search happens in the
// child, so the sandbox's own view of the filesystem decides which one runs.
func execCandidates(name string, env []string) []string {
	return spawn.ExecPaths(pathDirs(env), name)
}

// pathDirs are the program's PATH entries, or defaultPath's when it gets
// no PATH: cleaned, "." for an empty entry.
func pathDirs(env []string) []string {
	path, ok := lookupEnv(env, "PATH")
	if !ok {
		path = defaultPath
	}
	var out []string
	for _, d := range strings.Split(path, ":") {
		if d == "" {
			d = "."
		}
		out = append(out, filepath.Clean(d))
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
