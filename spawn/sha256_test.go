package spawn

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"math/rand/v2"
	"testing"
)

// TestSHA256MatchesGo: the C SHA-256 of every length 0..1000 and of a few
// MB, fed whole and in pieces of many sizes, is crypto/sha256's.
func TestSHA256MatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	msg := make([]byte, 3<<20+17)
	for i := range msg {
		msg[i] = byte(r.Uint32())
	}
	lengths := make([]int, 0, 1010)
	for n := 0; n <= 1000; n++ {
		lengths = append(lengths, n)
	}
	lengths = append(lengths, 1<<20, 2<<20+63, 3<<20+17)
	for _, n := range lengths {
		want := sha256.Sum256(msg[:n])
		steps := []int{n + 1, 1 + r.IntN(200)}
		if n < 5000 {
			steps = append(steps, 1, 55, 63, 64, 65)
		} else {
			steps = append(steps, 4096, 1<<16+3)
		}
		for _, step := range steps {
			if got := sha256C(msg[:n], step); got != want {
				t.Fatalf("length %d in pieces of %d: %x, want %x", n, step, got, want)
			}
		}
	}
}

// TestHMACMatchesGo: the C HMAC-SHA256 is crypto/hmac's for keys shorter
// than, as long as and longer than a block, and messages of many lengths.
func TestHMACMatchesGo(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	msg := make([]byte, 2<<20)
	for i := range msg {
		msg[i] = byte(r.Uint32())
	}
	keys := [][]byte{nil, {1}, msg[:32], msg[:63], msg[:64], msg[:65], msg[100:300]}
	for n := 0; n <= 1000; n++ {
		keys = append(keys, msg[n:n+r.IntN(150)])
	}
	for i, key := range keys {
		n := i % 1001
		if i < 7 {
			n = len(msg) - i*1000
		}
		m := hmac.New(sha256.New, key)
		m.Write(msg[:n])
		if got := hmacC(key, msg[:n]); !bytes.Equal(got[:], m.Sum(nil)) {
			t.Fatalf("key of %d bytes, message of %d: %x, want %x", len(key), n, got, m.Sum(nil))
		}
	}
}

func TestConstantTimeEqual(t *testing.T) {
	a := bytes.Repeat([]byte{0xa5}, 32)
	if !ctEqualC(a, bytes.Clone(a)) || !ctEqualC(nil, nil) {
		t.Fatal("equal bytes compare unequal")
	}
	for i := range a {
		for _, bit := range []byte{1, 0x80, 0xff} {
			b := bytes.Clone(a)
			b[i] ^= bit
			if ctEqualC(a, b) {
				t.Fatalf("byte %d differing by %#x compares equal", i, bit)
			}
		}
	}
}
