package spawn

import (
	"encoding/binary"
	"reflect"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// sampleRecipe has something in every list the runner reads.
func sampleRecipe() *Recipe {
	return &Recipe{
		Roots:     []string{"/tmp/ws"},
		SharedTmp: "/tmp/sandbox-executable-tmp-uid0",
		Claims: []RecipeClaim{{Parent: "/tmp/ws", Dir: "/run/sandbox-executable/placeholders/g-00",
			Placeholders: []string{"/tmp/ws/.git", "/tmp/ws/.codex"}}},
		Cgroups: []RecipeCgroup{
			{Parent: "/sys/fs/cgroup/sandbox-executable", Require: "memory pids", V2: true,
				Writes: []RecipeCgroupWrite{{File: "memory.max", Value: "536870912"}, {File: "memory.swap.max", Value: "0", SwapAccount: true},
					{File: "memory.oom.group", Value: "1", MayMiss: true}}},
			{Parent: "/sys/fs/cgroup/pids/x", Join: true, Writes: []RecipeCgroupWrite{{File: "pids.max", Value: "64"}}},
		},
		SweepRequest: "/run/sandbox-executable/sweep-wanted",
		SweepStamps:  []SweepStamp{{Path: "/run/sandbox-executable/swept", Every: time.Hour}},
		Landlock: RecipeLandlock{ABI: 7, HandledFS: 0xffff, HandledNet: 3, Scoped: 3, FileRights: 0x4007, NetConnect: 2,
			Rules: []RecipeRule{{Path: "/", Access: 0x7}, {Path: "/tmp/ws", Access: 0xffff, Required: true}}, Ports: []uint16{443}},
		Env:            []string{"PATH=/usr/bin:/bin", "HOME=/root"},
		PathDirs:       []string{"/usr/bin", "/bin", "."},
		ShellFallback:  true,
		Init:           true,
		NamespaceFlags: unix.CLONE_NEWNS | unix.CLONE_NEWPID,
		UnshareFlags:   unix.CLONE_NEWCGROUP,
		Pdeathsig:      unix.SIGKILL,
		Ops:            []Op{MakePrivate("/", "private"), MountNew("tmpfs", "/dev", unix.MS_NOSUID, "mode=755", "dev")},
		Rlimits:        []Rlimit{{Resource: unix.RLIMIT_CORE}},
		BPF:            make([]byte, 8*4),
		Notify:         true,
		Timeout:        120 * time.Second,
		Grace:          2 * time.Second,
		CPUBudget:      time.Minute,
		CPUSpread:      4,
		OOMWatch:       1,
		CPUUsage:       RecipeCounter{Cgroup: 0, File: "cpu.stat", Key: "usage_usec", Scale: 1000},
		OOMKills:       NoCounter,
		PidsHits:       RecipeCounter{Cgroup: 0, File: "pids.events", Key: "max", Scale: 1},
		KeepFDs:        []int{5},
		GoFromStart:    true,
		Say:            [EndingsN]string{EndTimeout: "timeout"},
	}
}

// TestRecipeEncodingIsValid: what Encode lays out is what the runner's own
// check accepts, empty or full.
func TestRecipeEncodingIsValid(t *testing.T) {
	for name, r := range map[string]*Recipe{"full": sampleRecipe(), "empty": {}} {
		b := r.Encode()
		if len(b)%8 != 0 {
			t.Errorf("%s: %d bytes, not a multiple of 8", name, len(b))
		}
		if !ValidRecipe(b) {
			t.Errorf("%s: the runner rejects Encode's recipe", name)
		}
	}
}

// TestRecipeCheckRejects: a recipe cut short, of another size, version or
// magic, or whose references point outside it, is refused.
func TestRecipeCheckRejects(t *testing.T) {
	good := sampleRecipe().Encode()
	mutate := func(f func(b []byte) []byte) []byte { return f(append([]byte(nil), good...)) }
	cases := map[string][]byte{
		"truncated":        good[:len(good)-8],
		"grown":            append(append([]byte(nil), good...), make([]byte, 8)...),
		"magic":            mutate(func(b []byte) []byte { b[0] ^= 1; return b }),
		"version":          mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[8:], 99); return b }),
		"size":             mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[12:], uint32(len(b)+8)); return b }),
		"roots past end":   mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[16:], uint32(len(b))); return b }),
		"roots count huge": mutate(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[20:], 1<<30); return b }),
		"header only":      good[:64],
	}
	for name, b := range cases {
		if ValidRecipe(b) {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestRecipeRecordsHaveNoHiddenPadding: every byte of a recipe's records
// is a field's (cgo names explicit padding "_"), so that one recipe always
// encodes to the same bytes.
func TestRecipeRecordsHaveNoHiddenPadding(t *testing.T) {
	for _, rec := range recipeRecords() {
		typ := reflect.TypeOf(rec)
		var sum uintptr
		for i := 0; i < typ.NumField(); i++ {
			sum += typ.Field(i).Type.Size()
		}
		if sum != typ.Size() {
			t.Errorf("%s: fields take %d of its %d bytes", typ, sum, typ.Size())
		}
	}
}

// TestRecipeCorpusHasRecipes: the C fuzzer's recipe corpus holds recipes
// the check accepts, so that libFuzzer starts past the header; a change of
// the layout (SE_RCP_VERSION) leaves it none until it is seeded again.
func TestRecipeCorpusHasRecipes(t *testing.T) {
	for _, b := range fuzzCorpus(t, "recipe") {
		if ValidRecipe(b) {
			return
		}
	}
	t.Error("no input of spawn/fuzz/corpus/recipe is a recipe this build accepts: reseed it (spawn/fuzz/seed.sh)")
}
