package policy

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// The fuzzers check that no input makes a decoder panic, that every error
// is a one-line *Error, and that every accepted input decodes again to the
// same value after being encoded the way serde would. Their seed corpus is
// every contract fixture (and the JSON arguments of the invocation
// fixtures) plus testdata/fuzz/<Fuzzer>/.

func addFixtureSeeds(f *testing.F) {
	names, err := filepath.Glob(filepath.Join(contractDir, "*.json"))
	if err != nil || len(names) == 0 {
		f.Fatalf("no fixtures: %v", err)
	}
	for _, name := range names {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		if len(data) > maxSeedSize {
			// Mutating and minimizing a 190 KB input stalls the fuzzer for
			// minutes at a time; seed the same shape, shortened instead.
			data = shortenRootsSeed(f, data)
		}
		f.Add(data)
		if strings.HasPrefix(filepath.Base(name), "invocation-") {
			var argv []string
			if err := json.Unmarshal(data, &argv); err != nil {
				f.Fatal(err)
			}
			for _, a := range argv {
				if strings.HasPrefix(a, "{") {
					f.Add([]byte(a))
				}
			}
		}
	}
}

// maxSeedSize bounds the size of a seed; only bad-enormous-array.json is
// larger, and TestContractEnormousArray covers it whole.
const maxSeedSize = 16 << 10

// shortenRootsSeed keeps the first few writable roots of a large
// workspace_write policy.
func shortenRootsSeed(f *testing.F, data []byte) []byte {
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		f.Fatal(err)
	}
	roots, ok := doc["writable_roots"].([]any)
	if !ok || len(roots) < 10 {
		f.Fatalf("unexpected large seed of %d bytes", len(data))
	}
	doc["writable_roots"] = roots[:10]
	out, err := json.Marshal(doc)
	if err != nil {
		f.Fatal(err)
	}
	return out
}

// checkDecodeError checks the properties every decoding error must have.
func checkDecodeError(t *testing.T, err error) {
	t.Helper()
	var pe *Error
	if !errors.As(err, &pe) {
		t.Fatalf("error %v (%T) is not *policy.Error", err, err)
	}
	if pe.Arg != "" || pe.Msg == "" {
		t.Fatalf("bad error %#v", pe)
	}
	if s := pe.Error(); strings.ContainsAny(s, "\n\r") || len(s) > 2000 {
		t.Fatalf("error is not one short line: %q", s)
	}
}

func FuzzDecodePolicy(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := DecodePolicy(data)
		if err != nil {
			checkDecodeError(t, err)
			return
		}
		if p.Kind != KindReadOnly && p.Kind != KindWorkspaceWrite {
			t.Fatalf("accepted variant %q", p.Kind)
		}
		enc := encodePolicy(p)
		again, err := DecodePolicy(enc)
		if err != nil {
			t.Fatalf("re-decoding %s: %v", enc, err)
		}
		// The encoder writes every field: re-decoded, the embedded copies
		// count as given.
		if p.Kind == KindWorkspaceWrite && (!again.GaveLimits || !again.GaveSeccomp) {
			t.Fatalf("re-decoded %s: embedded copies not recorded as given", enc)
		}
		again.GaveLimits, again.GaveSeccomp = p.GaveLimits, p.GaveSeccomp
		if !reflect.DeepEqual(p, again) {
			t.Fatalf("re-decoded differs:\n%+v\n%+v", p, again)
		}
	})
}

func FuzzDecodeProfileAndLimits(f *testing.F) {
	addFixtureSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		if s, err := DecodeSeccompProfile(data); err != nil {
			checkDecodeError(t, err)
		} else {
			again, err := DecodeSeccompProfile(encodeSeccomp(*s))
			if err != nil || !reflect.DeepEqual(s, again) {
				t.Fatalf("seccomp profile round trip: %v\n%+v\n%+v", err, s, again)
			}
		}
		if l, err := DecodeResourceLimits(data); err != nil {
			checkDecodeError(t, err)
		} else {
			again, err := DecodeResourceLimits(encodeLimits(*l))
			if err != nil || *l != *again {
				t.Fatalf("resource limits round trip: %v\n%+v\n%+v", err, l, again)
			}
		}
	})
}
