package recipestore

import (
	"crypto/rand"
	"testing"

	"sandbox-executable/runstate"
)

// BenchmarkStoreFull is Store into a directory kept full, as a user with
// many invocations has it: the first run of each new one stores while its
// program starts, and its helper's exit waits for the store.
func BenchmarkStoreFull(b *testing.B) {
	runstate.Base = b.TempDir()
	b.Cleanup(func() { runstate.Base = "" })
	body := make([]byte, 40000)
	var key [KeySize]byte
	for range MaxEntries {
		rand.Read(key[:])
		if err := Store(key, body); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		rand.Read(key[:])
		if err := Store(key, body); err != nil {
			b.Fatal(err)
		}
	}
}
