package procfs

import (
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"
)

func TestParseStat(t *testing.T) {
	for _, tc := range []struct {
		name, text string
		want       Stat
		bad        bool
	}{
		{name: "parentheses and spaces in the name",
			text: "4242 (a) b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 123456 1000 100 18446744073709551615\n",
			want: Stat{State: 'S', PPID: 1, StartTime: 123456}},
		{name: "zombie", text: "7 (sh) Z 99 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0 0",
			want: Stat{State: 'Z', PPID: 99, StartTime: 42}},
		{name: "short", text: "12 (x) S 1 2", bad: true},
		{name: "no name", text: "12 x S 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20", bad: true},
		{name: "bad ppid", text: "7 (sh) S x 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 42 0 0 0", bad: true},
		{name: "bad start", text: "7 (sh) S 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 -4 0 0 0", bad: true},
	} {
		got, err := ParseStat([]byte(tc.text))
		if tc.bad {
			if err == nil {
				t.Errorf("%s: accepted as %+v", tc.name, got)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

func TestReadStatSelf(t *testing.T) {
	st, err := ReadStat(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// The state is the main thread's, which may be asleep while another
	// thread runs the test: running or sleeping, not a zombie or stopped.
	if st.PPID != os.Getppid() || st.StartTime == 0 || (st.State != 'R' && st.State != 'S') {
		t.Fatalf("own stat %+v, ppid %d", st, os.Getppid())
	}
}

func TestDescendants(t *testing.T) {
	cmd := exec.Command("sh", "-c", "sleep 30 & wait")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { cmd.Process.Kill(); cmd.Wait() }()
	for i := 0; ; i++ {
		d := Descendants(os.Getpid())
		if len(d) >= 2 && slices.Contains(d, cmd.Process.Pid) {
			gc, err := ReadStat(d[len(d)-1])
			if err != nil || gc.PPID != cmd.Process.Pid {
				t.Fatalf("descendants %v: last one's stat %+v, %v", d, gc, err)
			}
			return
		}
		if i == 2000 {
			t.Fatalf("descendants %v: no child and grandchild", d)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
