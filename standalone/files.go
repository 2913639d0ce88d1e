package standalone

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"

	"sandbox-executable/fsdeps"
	"sandbox-executable/policy"
)

// ProjectFileName is the project file's name, looked for in the working
// directory and then in each of its parents: the nearest one is read.
const ProjectFileName = ".sandbox.json"

// userFile is the user's own settings file, below $XDG_CONFIG_HOME (or
// ~/.config).
const userFile = "sandbox-executable/config.json"

// maxFile bounds a settings file.
const maxFile = 1 << 20

// File is a settings file found for a run.
type File struct {
	// Path is where it was found; Real the file it is (links resolved).
	Path, Real string
	Settings   Settings
	// Ignored says why the file is not used, "" when it is.
	Ignored string
}

// Find returns the settings files that apply to a run in dir: the user's
// own (when it exists), then the nearest project file from dir up. Every
// look goes through fsdeps, so that a stored decision is made again when a
// file appears, changes or goes. A file that cannot be trusted (another
// user's, writable by others, in a directory others may write) is
// returned with Ignored set; one that cannot be read or parsed is an error
// naming it.
func Find(dir, home, xdgConfig string) ([]File, error) {
	var found []File
	cfg := xdgConfig
	if !filepath.IsAbs(cfg) && filepath.IsAbs(home) {
		cfg = filepath.Join(home, ".config")
	}
	if filepath.IsAbs(cfg) {
		if f, ok, err := load(filepath.Join(cfg, userFile)); err != nil {
			return nil, err
		} else if ok {
			found = append(found, f)
		}
	}
	for d := filepath.Clean(dir); filepath.IsAbs(d); d = filepath.Dir(d) {
		f, ok, err := load(filepath.Join(d, ProjectFileName))
		if err != nil {
			return nil, err
		}
		if ok {
			found = append(found, f)
			break
		}
		if d == "/" {
			break
		}
	}
	return found, nil
}

// load reads the settings file at path, if there is one.
func load(path string) (File, bool, error) {
	if _, err := fsdeps.Lstat(path); errors.Is(err, fs.ErrNotExist) {
		return File{}, false, nil
	}
	f := File{Path: path}
	real, err := fsdeps.EvalSymlinks(path)
	if err != nil {
		return File{}, false, fmt.Errorf("%s: %w", path, err)
	}
	f.Real = real
	if why := untrusted(real); why != "" {
		f.Ignored = why
		return f, true, nil
	}
	// Looked at before it is opened: the file may lie where a program
	// could have swapped it for a FIFO since untrusted looked.
	nf, err := fsdeps.ReadNoFollow(real, maxFile)
	if err != nil {
		return File{}, false, fmt.Errorf("%s: %w", path, err)
	}
	if !nf.Info.IsRegular() {
		return File{}, false, fmt.Errorf("%s: not a regular file", path)
	}
	data := nf.Data
	if len(data) > maxFile {
		return File{}, false, fmt.Errorf("%s: larger than %d bytes", path, maxFile)
	}
	if f.Settings, err = parseFile(data, path, filepath.Dir(path)); err != nil {
		return File{}, false, err
	}
	return f, true, nil
}

// untrusted says why the file at real (its directory included) could
// have been written by someone other than this user or root: then it is
// not read ("" when it can be trusted).
func untrusted(real string) string {
	me := uint32(os.Geteuid())
	fi, err := fsdeps.Stat(real)
	if err != nil {
		return err.Error()
	}
	if !fi.IsRegular() {
		return "not a regular file"
	}
	if fi.UID() != me && fi.UID() != 0 {
		return "owned by uid " + strconv.FormatUint(uint64(fi.UID()), 10) + ", not this user or root"
	}
	if fi.RawMode()&0o022 != 0 {
		return "writable by its group or by others"
	}
	di, err := fsdeps.Stat(filepath.Dir(real))
	if err != nil {
		return err.Error()
	}
	if di.UID() != me && di.UID() != 0 {
		return "its directory is owned by uid " + strconv.FormatUint(uint64(di.UID()), 10) + ", not this user or root"
	}
	if m := di.RawMode(); m&0o002 != 0 && m&unix.S_ISVTX == 0 {
		return "its directory is writable by others"
	}
	return ""
}

// fileJSON is a settings file: the flags' vocabulary, one key each.
type fileJSON struct {
	RW            []string `json:"rw"`
	RO            []string `json:"ro"`
	Hide          []string `json:"hide"`
	Net           *words   `json:"net"`
	Timeout       *word    `json:"timeout"`
	Memory        *word    `json:"memory"`
	Pids          *word    `json:"pids"`
	CPU           *word    `json:"cpu"`
	PersistCache  *bool    `json:"persist_cache"`
	ScratchCaches *bool    `json:"scratch_caches"`
	GitCommit     *bool    `json:"allow_git_commit"`
}

// word is a JSON string or number, as text.
type word string

func (w *word) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*w = word(s)
		return nil
	}
	var n json.Number
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&n); err != nil {
		return errors.New("expected a string or a number")
	}
	*w = word(n.String())
	return nil
}

// words is a JSON string or a list of strings.
type words []string

func (w *words) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*w = words{s}
		return nil
	}
	var l []string
	if err := json.Unmarshal(b, &l); err != nil {
		return errors.New("expected a string or a list of strings")
	}
	*w = l
	return nil
}

// parseFile reads a settings file's JSON. An unknown key is an error: it
// could be a restriction misspelled, which would otherwise silently not
// hold.
func parseFile(data []byte, path, dir string) (Settings, error) {
	var j fileJSON
	d := json.NewDecoder(bytes.NewReader(data))
	d.DisallowUnknownFields()
	if err := d.Decode(&j); err != nil {
		return Settings{}, fmt.Errorf("%s: %w", path, err)
	}
	if d.More() {
		return Settings{}, fmt.Errorf("%s: more than one JSON value", path)
	}
	var s Settings
	list := func(key string, vals []string) []Value {
		var out []Value
		for i, v := range vals {
			out = append(out, Value{Text: v, From: path + ": " + key + "[" + strconv.Itoa(i) + "]", Dir: dir})
		}
		return out
	}
	s.RW, s.RO, s.Hide = list("rw", j.RW), list("ro", j.RO), list("hide", j.Hide)
	if j.Net != nil {
		s.Net = list("net", *j.Net)
	}
	one := func(key string, w *word) *Value {
		if w == nil {
			return nil
		}
		return &Value{Text: string(*w), From: path + ": " + key, Dir: dir}
	}
	s.Timeout, s.Memory, s.Pids, s.CPU = one("timeout", j.Timeout), one("memory", j.Memory), one("pids", j.Pids), one("cpu", j.CPU)
	flag := func(key string, b *bool) *Value {
		if b == nil {
			return nil
		}
		return &Value{Text: strconv.FormatBool(*b), From: path + ": " + key, Dir: dir}
	}
	s.PersistCache, s.ScratchCaches = flag("persist_cache", j.PersistCache), flag("scratch_caches", j.ScratchCaches)
	s.GitCommit = flag("allow_git_commit", j.GitCommit)
	return s, nil
}

// InRoot returns the writable root of plan that holds the file (as found,
// or as resolved), "" when none does: a program that could write the file
// could widen its next run, so the file is then not used.
func (f *File) InRoot(plan *policy.Plan) string {
	for _, r := range plan.Filesystem.WritableRoots {
		if policy.Within(f.Path, r.Path) || policy.Within(f.Real, r.Path) {
			return r.Path
		}
	}
	return ""
}
