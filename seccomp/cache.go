package seccomp

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"

	"sandbox-executable/policy"
)

// cacheFormat changes whenever what a cached program means changes.
const cacheFormat = "1"

// cacheKey names a compiled program by everything that went into it.
func cacheKey(s *policy.Seccomp, opt Options) string {
	h := sha256.New()
	rules, _ := json.Marshal(s.Rules)
	for _, part := range [][]byte{[]byte(cacheFormat), []byte(LibraryVersion()), []byte(runtime.GOARCH),
		[]byte{boolByte(opt.Notify)}, rules} {
		h.Write(part)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func boolByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// cacheLoad reads a program back; a missing or malformed entry is a miss.
func cacheLoad(dir, key string) ([]byte, bool) {
	b, err := os.ReadFile(filepath.Join(dir, key))
	if err != nil || len(b) == 0 || len(b)%8 != 0 {
		return nil, false
	}
	return b, true
}

// cacheStore writes a program under its key, atomically (a temp file then a
// rename), so that a concurrent reader sees all of it or nothing.
func cacheStore(dir, key string, bpf []byte) {
	f, err := os.CreateTemp(dir, key+".tmp-")
	if err != nil {
		return
	}
	_, werr := f.Write(bpf)
	if cerr := f.Close(); werr != nil || cerr != nil {
		os.Remove(f.Name())
		return
	}
	if os.Rename(f.Name(), filepath.Join(dir, key)) != nil {
		os.Remove(f.Name())
	}
}
