package supervisor

import (
	"log/slog"
	"os"
	"strconv"

	"golang.org/x/sys/unix"

	"sandbox-executable/writeback"
)

// writeBack writes what the run added to each scratch cache back to the
// host's (--persist-cache), once the program and everything it started
// are gone, and only when the program succeeded: a build that failed or
// was ended may have left what it was in the middle of writing. The
// layers' tmpfs (open at layers, as the child sent it) outlives the
// child's namespace through the descriptor, and nothing but this process
// can reach it any more.
func writeBack(layers int, caches []string, res *Result, log *slog.Logger) {
	if layers < 0 {
		return
	}
	defer unix.Close(layers)
	if !res.Started || res.Ending != Exited || res.ExitCode != 0 {
		log.Info("scratch caches not written back: the program did not exit with status 0", "ending", res.Ending, "exit_code", res.ExitCode)
		return
	}
	for i, cache := range caches {
		st, err := writeBackOne(layers, i, cache)
		if err != nil {
			// The run's own result stands; the cache keeps what was
			// written until then, each file whole.
			log.Warn("scratch cache written back in part", "cache", cache, "error", err, "added", st.String())
			res.WriteBack = append(res.WriteBack, cache+": "+st.String()+"; stopped: "+err.Error())
			continue
		}
		log.Info("scratch cache written back", "cache", cache, "added", st.String())
		res.WriteBack = append(res.WriteBack, cache+": "+st.String())
	}
}

// writeBackOne merges layer i's upper directory into cache.
func writeBackOne(layers, i int, cache string) (writeback.Stats, error) {
	upper, err := os.OpenRoot("/proc/self/fd/" + strconv.Itoa(layers) + "/" + strconv.Itoa(i) + "/upper")
	if err != nil {
		return writeback.Stats{}, err
	}
	defer upper.Close()
	dst, err := os.OpenRoot(cache)
	if err != nil {
		return writeback.Stats{}, err
	}
	defer dst.Close()
	return writeback.Merge(upper, dst)
}
