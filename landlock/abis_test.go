package landlock

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"sandbox-executable/policy"
)

// TestABITableShape: one row per ABI, in order, each naming a distinct
// feature with what is missing without it; what each ABI adds is new.
func TestABITableShape(t *testing.T) {
	seen := map[Feature]bool{}
	var fs AccessFS
	var net, scoped uint64
	for i, r := range abiTable {
		if r.ABI != i+1 {
			t.Errorf("row %d is ABI %d", i, r.ABI)
		}
		if seen[r.Feature] || r.Feature == "" || r.Missing == "" {
			t.Errorf("ABI %d: feature %q repeated or undescribed", r.ABI, r.Feature)
		}
		seen[r.Feature] = true
		if r.Feature.Since() != r.ABI {
			t.Errorf("%s.Since() = %d, want %d", r.Feature, r.Feature.Since(), r.ABI)
		}
		if (r.fs|r.optFS)&fs != 0 || r.net&net != 0 || r.scoped&scoped != 0 {
			t.Errorf("ABI %d adds rights an older ABI has", r.ABI)
		}
		fs |= r.fs | r.optFS
		net |= r.net
		scoped |= r.scoped
	}
	if KnownABI() != 11 {
		t.Errorf("KnownABI = %d", KnownABI())
	}
}

// TestABITableKernelValues: the table's rights are the kernel's values
// (7.3's include/uapi/linux/landlock.h, as x/sys/unix has them).
func TestABITableKernelValues(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want uint64
	}{
		{"fs at ABI 1", uint64(fsRightsAt(1)), 1<<13 - 1},
		{"refer", uint64(fsRightsAt(2) &^ fsRightsAt(1)), unix.LANDLOCK_ACCESS_FS_REFER},
		{"truncate", uint64(fsRightsAt(3) &^ fsRightsAt(2)), unix.LANDLOCK_ACCESS_FS_TRUNCATE},
		{"ioctl_dev", uint64(fsRightsAt(5) &^ fsRightsAt(4)), unix.LANDLOCK_ACCESS_FS_IOCTL_DEV},
		{"resolve_unix (on request)", uint64(optionalFSAt(9)), unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX},
		{"resolve_unix not by default", uint64(fsRightsAt(11) & ResolveUnx), 0},
		{"TCP", netRightsAt(4), unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP},
		{"UDP", netRightsAt(10) &^ netRightsAt(9), unix.LANDLOCK_ACCESS_NET_BIND_UDP | unix.LANDLOCK_ACCESS_NET_CONNECT_SEND_UDP},
		{"scopes", scopesAt(6), unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL},
		{"no scopes at 5", scopesAt(5), 0},
		{"tsync", uint64(flagsAt(8)), unix.LANDLOCK_RESTRICT_SELF_TSYNC},
		{"no flags at 7", uint64(flagsAt(7)), 0},
		{"log new exec", logNewExecOn, unix.LANDLOCK_RESTRICT_SELF_LOG_NEW_EXEC_ON},
		{"beyond the table", uint64(fsRightsAt(99)), uint64(fsRightsAt(KnownABI()))},
	} {
		if c.got != c.want {
			t.Errorf("%s: %#x, want %#x", c.name, c.got, c.want)
		}
	}
}

// TestComputeFollowsTheTable: what Compute handles on each ABI.
func TestComputeFollowsTheTable(t *testing.T) {
	p := &policy.Plan{}
	p.Network.Mode = policy.NetworkNone
	for abi := 0; abi <= 12; abi++ {
		s := Compute(p, Options{ABI: abi, ResolveUnix: true, LogDenials: true})
		if got, want := s.RestrictFlags&restrictTSync != 0, abi >= 8; got != want {
			t.Errorf("ABI %d: tsync %v", abi, got)
		}
		if got, want := s.HandledNet&netBindUDP != 0, abi >= 10; got != want {
			t.Errorf("ABI %d: UDP handled %v", abi, got)
		}
		if got, want := s.HandledFS&ResolveUnx != 0, abi >= 9; got != want {
			t.Errorf("ABI %d: resolve_unix handled %v", abi, got)
		}
		var rights []string
		for _, g := range s.Gaps {
			rights = append(rights, g.Right)
		}
		if abi == 0 && strings.Join(rights, ",") != "landlock" {
			t.Errorf("ABI 0 gaps %v, want only landlock", rights)
		}
		if abi >= 6 && len(rights) != 0 {
			t.Errorf("ABI %d gaps %v", abi, rights)
		}
	}
	s := Compute(p, Options{ABI: 2})
	var rights []string
	for _, g := range s.Gaps {
		rights = append(rights, g.Right)
	}
	if got := strings.Join(rights, ","); got != "truncate,net,ioctl_dev,scope" {
		t.Errorf("ABI 2 gaps %s", got)
	}
	// The allowlist on the host's loopback: UDP refused from ABI 10.
	p.Network.Mode = policy.NetworkAllowlist
	s = Compute(p, Options{ABI: 10})
	if s = s.WithPort(3128); s.HandledNet != netConnectTCP|netBindUDP|netConnectSendUDP || len(s.Ports) != 1 {
		t.Errorf("ABI 10 WithPort: net %#x ports %v", s.HandledNet, s.Ports)
	}
}

// TestErrataGaps: an unfixed erratum that widens access is a gap where the
// kernel answered the query; one that only refuses more is not.
func TestErrataGaps(t *testing.T) {
	p := &policy.Plan{}
	none := uint64(0)
	s := Compute(p, Options{ABI: 7, Errata: &none})
	if len(s.Gaps) != 1 || s.Gaps[0].Right != "erratum 3" || s.Gaps[0].WriteBoundary {
		t.Errorf("errata 0: gaps %+v", s.Gaps)
	}
	all := uint64(0xf)
	if s = Compute(p, Options{ABI: 7, Errata: &all}); len(s.Gaps) != 0 {
		t.Errorf("all fixed: gaps %+v", s.Gaps)
	}
	if s = Compute(p, Options{ABI: 7}); len(s.Gaps) != 0 {
		t.Errorf("no answer: gaps %+v", s.Gaps)
	}
}
