package hostfacts

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// fakeRoot writes files (path -> content) under a temporary root; a path
// ending in "/" is made a directory.
func fakeRoot(t *testing.T, files map[string]string) env {
	t.Helper()
	root := t.TempDir()
	for p, content := range files {
		full := filepath.Join(root, p)
		if strings.HasSuffix(p, "/") {
			if err := os.MkdirAll(full, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return env{root: root, getenv: func(string) string { return "" }}
}

const statusRoot = `Name:	cat
Umask:	0022
State:	R (running)
CapInh:	0000000000000000
CapPrm:	000001fffeffffff
CapEff:	000001fffeffffff
CapBnd:	000001fffeffffff
CapAmb:	0000000000000000
NoNewPrivs:	0
Seccomp:	2
Seccomp_filters:	1
Speculation_Store_Bypass:	thread vulnerable
`

func TestParseStatus(t *testing.T) {
	s := ParseStatus(statusRoot)
	if !s.HaveCapEff || s.CapEff != 0x1fffeffffff || s.NoNewPrivs != 0 || s.Seccomp != 2 || s.SeccompFilters != 1 {
		t.Fatalf("parseStatus = %+v", s)
	}
	if !s.HasCap(21) || !s.HasCap(12) || !s.HasCap(19) || s.HasCap(24) {
		t.Errorf("capability bits wrong: %+v", s)
	}
	none := ParseStatus("Name:\tx\nSeccomp_filters:\tnope\n")
	if none.HaveCapEff || none.Seccomp != -1 || none.NoNewPrivs != -1 || none.SeccompFilters != -1 {
		t.Errorf("absent fields: %+v", none)
	}
}

func TestParseWSL(t *testing.T) {
	for _, c := range []struct {
		version, distro string
		want            WSL
	}{
		{"Linux version 4.4.0-19041-Microsoft (Microsoft@Microsoft.com) (gcc version 5.4.0 (GCC) ) #1237-Microsoft", "", WSL{Detected: true, Version: 1}},
		{"Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1) (gcc (GCC) 11.2.0)", "Ubuntu", WSL{Detected: true, Version: 2, Distro: "Ubuntu"}},
		{"Linux version 6.18.44 (builder@sandboxing) (gcc (GCC) 15.3.0)", "", WSL{}},
		{"Linux version 6.1.0-18-amd64 (debian-kernel@lists.debian.org)", "Debian", WSL{Detected: true, Distro: "Debian"}},
	} {
		if got := parseWSL(c.version, c.distro); !reflect.DeepEqual(got, c.want) {
			t.Errorf("parseWSL(%q, %q) = %+v, want %+v", c.version, c.distro, got, c.want)
		}
	}
}

func TestContainerMarkers(t *testing.T) {
	e := fakeRoot(t, map[string]string{
		"/.dockerenv":                "",
		"/run/.containerenv":         "engine=\"podman-4.3.1\"\n",
		"/proc/1/environ":            "PATH=/usr/bin\x00container=podman\x00HOME=/\x00",
		"/proc/1/cgroup":             "0::/machine.slice/libpod-4f2a.scope/container\n",
		"/proc/self/mountinfo":       "1 0 0:40 / / rw,relatime - overlay overlay rw,lowerdir=/a,upperdir=/b\n2 1 0:5 / /proc rw - proc proc rw\n",
		"/proc/sys/kernel/osrelease": "6.1.0-18-amd64\n",
	})
	h := e.system()
	want := []string{
		"/.dockerenv (Docker)",
		"/run/.containerenv (Podman)",
		"pid 1 environment container=podman",
		"/proc/1/cgroup path /machine.slice/libpod-4f2a.scope/container",
		"overlay root filesystem",
	}
	if !h.Container.Likely || !slices.Equal(h.Container.Markers, want) || len(h.Container.Unreadable) != 0 {
		t.Errorf("container = %+v, want markers %q", h.Container, want)
	}
	if h.RootFS != "overlay" || h.Kernel != "6.1.0-18-amd64" {
		t.Errorf("root fs %q, kernel %q", h.RootFS, h.Kernel)
	}

	bare := fakeRoot(t, map[string]string{
		"/proc/self/cgroup":    "4:memory:/process_api/9dc8\n0::/\n",
		"/proc/self/mountinfo": "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n",
		"/run/systemd/system/": "",
	})
	h = bare.system()
	if h.Container.Likely || len(h.Container.Markers) != 0 {
		t.Errorf("bare root has markers: %+v", h.Container)
	}
	if !slices.Equal(h.Container.Unreadable, []string{"/proc/1/environ", "/proc/1/cgroup"}) {
		t.Errorf("unreadable = %v", h.Container.Unreadable)
	}
	if !h.Systemd || h.RootFS != "ext4" {
		t.Errorf("systemd %v, root fs %q", h.Systemd, h.RootFS)
	}
	for text, want := range map[string]string{
		"12:pids:/kubepods/besteffort/pod1/abc\n": "/kubepods/besteffort/pod1/abc",
		"0::/system.slice/docker-0123.scope\n":    "/system.slice/docker-0123.scope",
		"0::/user.slice/user-1000.slice\n":        "",
		"0::/\n":                                  "",
	} {
		if got := cgroupHint(text); got != want {
			t.Errorf("cgroupHint(%q) = %q, want %q", text, got, want)
		}
	}
}

// TestWSLSigns: WSL is told by the kernel's release (osrelease) and by
// WSL's interop entry, without /proc/version or the distribution's name.
func TestWSLSigns(t *testing.T) {
	e := fakeRoot(t, map[string]string{
		"/proc/sys/kernel/osrelease":          "6.6.87.2-microsoft-standard-WSL2\n",
		"/proc/sys/fs/binfmt_misc/WSLInterop": "enabled\n",
	})
	e.getenv = func(string) string { return "" }
	h := e.system()
	want := WSL{Detected: true, Version: 2, Signs: []string{"kernel release 6.6.87.2-microsoft-standard-WSL2", "WSL interop (/proc/sys/fs/binfmt_misc/WSLInterop)"}}
	if !reflect.DeepEqual(h.WSL, want) {
		t.Errorf("wsl = %+v, want %+v", h.WSL, want)
	}
	e = fakeRoot(t, map[string]string{"/proc/sys/fs/binfmt_misc/WSLInterop-late": "enabled\n", "/proc/sys/kernel/osrelease": "6.18.44\n"})
	e.getenv = func(string) string { return "" }
	if h := e.system(); !h.WSL.Detected || len(h.WSL.Signs) != 1 {
		t.Errorf("interop alone: %+v", h.WSL)
	}
}

func TestHostFilesLSMAndWSL(t *testing.T) {
	e := fakeRoot(t, map[string]string{
		"/proc/version":            "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@x)\n",
		"/sys/kernel/security/lsm": "lockdown,capability,landlock,yama,apparmor\n",
		"/proc/cmdline":            "BOOT_IMAGE=/vmlinuz lsm=yama lsm=landlock,yama ro -- --lsm=notme\n",
	})
	e.getenv = func(k string) string {
		if k == "WSL_DISTRO_NAME" {
			return "Debian"
		}
		return ""
	}
	h := e.system()
	if want := (WSL{Detected: true, Version: 2, Distro: "Debian", Signs: []string{"/proc/version", "WSL_DISTRO_NAME=Debian"}}); !reflect.DeepEqual(h.WSL, want) {
		t.Errorf("wsl = %+v, want %+v", h.WSL, want)
	}
	if !slices.Equal(h.LSMs, []string{"lockdown", "capability", "landlock", "yama", "apparmor"}) || h.BootLSM != "landlock,yama" {
		t.Errorf("lsms %v, boot lsm %q", h.LSMs, h.BootLSM)
	}
	if h.Systemd {
		t.Error("systemd without /run/systemd/system")
	}
}

func TestSysctlsFromFakeProc(t *testing.T) {
	e := fakeRoot(t, map[string]string{
		"/proc/sys/user/max_user_namespaces":                     "0\n",
		"/proc/sys/user/max_net_namespaces":                      "7\n",
		"/proc/sys/kernel/apparmor_restrict_unprivileged_userns": "1\n",
	})
	got := e.sysctls()
	want := Sysctls{MaxUserNS: 0, MaxMntNS: -1, MaxNetNS: 7, UnprivClone: -1, AppArmorRestrict: 1}
	if got != want {
		t.Errorf("sysctls = %+v, want %+v", got, want)
	}
	if c := (fakeRoot(t, map[string]string{"/proc/sys/kernel/cap_last_cap": "40\n"})).capLastCap(); c != 40 {
		t.Errorf("cap_last_cap = %d", c)
	}
}
