package mountns

import (
	"bytes"
	"os"
	"strconv"
	"strings"
)

// capSysAdmin is CAP_SYS_ADMIN's bit in /proc/self/status's CapEff.
const capSysAdmin = 21

// Availability says whether this process can give its child a mount
// namespace, and how.
type Availability struct {
	OK bool `json:"ok"`
	// Privileged: CAP_SYS_ADMIN, so no user namespace is needed.
	Privileged bool `json:"privileged"`
	// Why explains the answer, including what would change it.
	Why string `json:"why"`
}

// Probe answers from what the kernel advertises, without creating a
// namespace (that costs a fork). A namespace that the probe allows but the
// kernel still refuses (a container's seccomp filter, say) shows up as a
// failed clone, which the supervisor treats the same way.
func Probe() Availability {
	if hasCap(capSysAdmin) {
		return Availability{OK: true, Privileged: true, Why: "CAP_SYS_ADMIN: a mount namespace without a user namespace"}
	}
	if v, ok := readInt("/proc/sys/user/max_user_namespaces"); ok && v == 0 {
		return Availability{Why: "user namespaces are disabled (user.max_user_namespaces is 0); raise it, or run as root"}
	}
	if v, ok := readInt("/proc/sys/kernel/unprivileged_userns_clone"); ok && v == 0 {
		return Availability{Why: "unprivileged user namespaces are disabled (kernel.unprivileged_userns_clone is 0); set it to 1, or run as root"}
	}
	if v, ok := readInt("/proc/sys/kernel/apparmor_restrict_unprivileged_userns"); ok && v == 1 {
		return Availability{Why: "AppArmor restricts unprivileged user namespaces (kernel.apparmor_restrict_unprivileged_userns is 1); install the AppArmor profile shipped with sandbox-executable, or run as root"}
	}
	return Availability{OK: true, Why: "unprivileged user namespaces are allowed: a user namespace that maps the user to itself, and a mount namespace in it"}
}

func readInt(path string) (int, bool) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, false
	}
	v, err := strconv.Atoi(strings.TrimSpace(string(b)))
	return v, err == nil
}

// hasCap reports whether the effective capability set holds bit n.
func hasCap(n uint) bool {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return false
	}
	for _, line := range bytes.Split(b, []byte("\n")) {
		if v, ok := bytes.CutPrefix(line, []byte("CapEff:")); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(string(v)), 16, 64)
			return err == nil && caps&(1<<n) != 0
		}
	}
	return false
}
