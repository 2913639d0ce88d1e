package doctor

import (
	"fmt"
	"strings"
)

// Column widths of Text: status, then item ID.
const (
	statusWidth = 9
	idWidth     = 14
)

var statusColor = map[Status]string{StatusOK: "\x1b[32m", StatusDegraded: "\x1b[33m", StatusMissing: "\x1b[31m"}

const colorReset = "\x1b[0m"

// Text renders the report for people, one screen: the host, one aligned
// line per item with its notes below it, an indented "fix:" line under
// every item that is not ok, and the verdict. It uses ANSI colours only
// when Options.Color was set.
// wslNote is what WSL 2 gives the helper, as Microsoft's kernel
// configuration (config-wsl of microsoft/WSL2-Linux-Kernel, 6.18) has it;
// the checks below say what this kernel really does.
const wslNote = "WSL 2 runs Microsoft's kernel: its configuration builds Landlock in, first in its LSM list, with user, PID, network and mount namespaces and cgroup v2's memory, pids and cpu controllers; enable systemd (/etc/wsl.conf: [boot] systemd=true) for a delegated cgroup, and for Landlock on an older WSL kernel run wsl --update"

func (r Report) Text() string {
	var b strings.Builder
	h := r.Host
	pad := strings.Repeat(" ", statusWidth)
	fmt.Fprintf(&b, "%-*s%s", statusWidth, "host", "kernel "+h.Kernel)
	if h.Arch != "" {
		fmt.Fprintf(&b, " (%s)", h.Arch)
	}
	fmt.Fprintf(&b, ", uid %d euid %d", h.UID, h.EUID)
	if h.Systemd {
		b.WriteString(", systemd")
	} else {
		b.WriteString(", no systemd")
	}
	if h.RootFS != "" {
		b.WriteString(", root fs " + h.RootFS)
	}
	b.WriteString("\n")
	switch {
	case h.Container.Likely:
		b.WriteString(pad + "container markers: " + strings.Join(h.Container.Markers, "; "))
	default:
		b.WriteString(pad + "container markers: none")
	}
	if len(h.Container.Unreadable) > 0 {
		b.WriteString(" (unreadable: " + strings.Join(h.Container.Unreadable, ", ") + ")")
	}
	b.WriteString("\n")
	if h.WSL.Detected {
		fmt.Fprintf(&b, "%sWSL %d", pad, h.WSL.Version)
		if h.WSL.Distro != "" {
			b.WriteString(" (" + h.WSL.Distro + ")")
		}
		if len(h.WSL.Signs) > 0 {
			b.WriteString(": " + strings.Join(h.WSL.Signs, "; "))
		}
		b.WriteString("\n")
		if h.WSL.Version != 1 {
			b.WriteString(pad + wslNote + "\n")
		}
	}
	b.WriteString("\n")

	notePad := strings.Repeat(" ", statusWidth+idWidth)
	var bad []string
	for _, it := range r.Checks {
		st := fmt.Sprintf("%-*s", statusWidth, it.Status)
		if r.color {
			st = statusColor[it.Status] + string(it.Status) + colorReset + st[len(it.Status):]
		}
		fmt.Fprintf(&b, "%s%-*s%s\n", st, idWidth, it.ID, it.Detail)
		for _, n := range it.Notes {
			b.WriteString(notePad + n + "\n")
		}
		if it.Status != StatusOK && it.Fix != "" {
			b.WriteString(pad + "fix: " + it.Fix + "\n")
		}
		if it.Strict && it.Status != StatusOK {
			bad = append(bad, it.ID)
		}
	}
	b.WriteString("\n")
	if r.OK {
		b.WriteString("every part of the strict model is available\n")
	} else {
		b.WriteString("not available here: " + strings.Join(bad, ", ") + " (see fix: above)\n")
	}
	return b.String()
}
