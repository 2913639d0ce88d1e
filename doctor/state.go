package doctor

import (
	"strings"

	"sandbox-executable/hostfacts"
)

// stateItem says where the helper keeps its state for this user, and
// whether it had to move it (another user took the /tmp place first).
// Informational: a run that cannot have a state directory refuses on its
// own, with the same words.
func stateItem(f *hostfacts.Facts, d *hostfacts.Diagnosis) Item {
	it := Item{ID: "state", Title: "state directory (filter cache, recipes, placeholder locks)", Status: StatusOK}
	switch {
	case len(f.StateDirs) == 0:
		it.Status = StatusMissing
		it.Detail = "none can be had"
		if d.StateMoved != "" {
			it.Detail += ": " + d.StateMoved
		}
		it.Fix = "ask the owner of the /tmp place (or root) to remove it, or give this user a home directory of its own in /etc/passwd"
		return it
	case d.StateMoved != "" && !strings.HasPrefix(f.StateDirs[0], "/run/"):
		it.Status = StatusDegraded
		it.Detail = f.StateDirs[0] + ", in the home directory: " + d.StateMoved
		it.Fix = "ask its owner (or root) to remove it; until then runs keep their state in the home directory"
	default:
		it.Detail = f.StateDirs[0]
		if d.StateMoved != "" {
			it.Notes = append(it.Notes, d.StateMoved+": without the runtime directory the state would be kept in the home directory")
		}
	}
	if len(f.StateDirs) > 1 {
		it.Notes = append(it.Notes, "denied to every sandbox too, made in advance (where the state would move): "+strings.Join(f.StateDirs[1:], ", "))
	}
	return it
}
