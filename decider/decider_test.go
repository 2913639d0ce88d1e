package decider

import (
	"bytes"
	"encoding/binary"
	"net"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// encode is a request's bytes as spawn/decider.h specifies them, written
// here apart from the C that sends them (se_decider_request), so that the
// two readings of the format meet in Parse.
func encode(r *Request) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, magic)
	b = le.AppendUint32(b, version)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint32(b, 0)
	b = le.AppendUint64(b, r.NofileCur)
	b = le.AppendUint64(b, r.NofileMax)
	for _, list := range [][]string{r.Args, r.Env} {
		b = le.AppendUint32(b, uint32(len(list)))
		for _, s := range list {
			b = le.AppendUint32(b, uint32(len(s)))
			b = append(b, s...)
		}
	}
	le.PutUint32(b[8:], uint32(len(b)))
	return b
}

var sample = &Request{
	Args:      []string{"sandbox-executable", "--sandbox-policy", `{"type":"read_only"}`, "--", "make", ""},
	Env:       []string{"HOME=/home/u", "PATH=/usr/bin:/bin", "EMPTY="},
	NofileCur: 1024, NofileMax: 524288,
}

func TestParseRoundTrip(t *testing.T) {
	r, err := Parse(encode(sample))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Args, sample.Args) || !slices.Equal(r.Env, sample.Env) || r.NofileCur != 1024 || r.NofileMax != 524288 {
		t.Errorf("parsed %+v", r)
	}
}

func TestParseRefuses(t *testing.T) {
	good := encode(sample)
	le := binary.LittleEndian
	cases := map[string][]byte{
		"empty":     nil,
		"header":    good[:headerSize],
		"truncated": good[:len(good)-1],
		"trailing":  append(slices.Clone(good), 0),
		"no argv":   encode(&Request{}),
		"nul":       encode(&Request{Args: []string{"a\x00b"}}),
	}
	for name, edit := range map[string]func(b []byte){
		"magic":    func(b []byte) { b[0] ^= 1 },
		"version":  func(b []byte) { le.PutUint32(b[4:], 2) },
		"size":     func(b []byte) { le.PutUint32(b[8:], uint32(len(b)+1)) },
		"reserved": func(b []byte) { b[12] = 1 },
		"argc":     func(b []byte) { le.PutUint32(b[32:], 0xffffffff) },
		"length":   func(b []byte) { le.PutUint32(b[36:], 0xffff) },
	} {
		b := slices.Clone(good)
		edit(b)
		cases[name] = b
	}
	// Truncations keep the size field honest: Parse must find the gap.
	for n := headerSize; n < len(good); n++ {
		b := slices.Clone(good[:n])
		le.PutUint32(b[8:], uint32(n))
		if _, err := Parse(b); err == nil {
			t.Errorf("%d of %d bytes parsed", n, len(good))
		}
	}
	for name, b := range cases {
		if r, err := Parse(b); err == nil {
			t.Errorf("%s: parsed %+v", name, r)
		}
	}
}

// FuzzParse: Parse never panics, and what it accepts is exactly the
// encoding of what it returns.
func FuzzParse(f *testing.F) {
	f.Add(encode(sample))
	f.Add(encode(&Request{Args: []string{"x"}}))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			return
		}
		if again := encode(r); !bytes.Equal(again, b) {
			t.Fatalf("accepted %x, which encodes back as %x", b, again)
		}
	})
}

// send connects to sock and sends b with the descriptors fds.
func send(t *testing.T, sock string, b []byte, fds []int) byte {
	t.Helper()
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	if _, _, err := c.WriteMsgUnix(b, oob, nil); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer := make([]byte, 1)
	if n, _ := c.Read(answer); n != 1 {
		return 0
	}
	return answer[0]
}

// TestServe: a request with its four descriptors reaches Decide, whose
// answer is sent back; one the peer check refuses, one without its
// descriptors and a malformed one are answered 'N' without a decision.
func TestServe(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "d.sock")
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"})
	if err != nil {
		t.Fatal(err)
	}
	var got []*Request
	var peerOK atomic.Bool
	peerOK.Store(true)
	done := make(chan error, 1)
	go func() {
		done <- Serve(l, Handler{
			Peer: func(status []byte) bool { return peerOK.Load() && bytes.Contains(status, []byte("\nUid:")) },
			Decide: func(r *Request) bool {
				var st unix.Stat_t
				if err := unix.Fstat(int(r.Cwd.Fd()), &st); err != nil {
					t.Errorf("cwd: %v", err)
				}
				var want unix.Stat_t
				unix.Stat(dir, &want)
				if st.Ino != want.Ino {
					t.Errorf("cwd is inode %d, not the directory sent (%d)", st.Ino, want.Ino)
				}
				got = append(got, r)
				return true
			},
		})
	}()
	cwd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(cwd)
	fds := []int{cwd, 0, 1, 2}
	if a := send(t, sock, encode(sample), fds); a != 'S' || len(got) != 1 || !slices.Equal(got[0].Args, sample.Args) {
		t.Errorf("a request: answer %q, decided %d", a, len(got))
	}
	if a := send(t, sock, encode(sample), fds[:3]); a != 'N' || len(got) != 1 {
		t.Errorf("three descriptors: answer %q, decided %d", a, len(got))
	}
	bad := encode(sample)
	bad[0] ^= 1
	if a := send(t, sock, bad, fds); a != 'N' || len(got) != 1 {
		t.Errorf("a malformed request: answer %q, decided %d", a, len(got))
	}
	peerOK.Store(false)
	if a := send(t, sock, encode(sample), fds); a != 'N' || len(got) != 1 {
		t.Errorf("a peer refused: answer %q, decided %d", a, len(got))
	}
	l.Close()
	if err := <-done; err != nil {
		t.Errorf("Serve: %v", err)
	}
}
