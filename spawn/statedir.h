/*
 * Where the helper's per-user state directory lies: the one rule, which the
 * warm path's lookup (recipestore.c) follows before the Go runtime starts,
 * and which Go (package runstate, through spawn.StatePlaces) asks for rather
 * than keep a copy of it. It depends on the user and the filesystem alone,
 * never on the environment the caller passes, so that every run of a user
 * finds the same directory (their placeholder claims meet there) and no
 * caller can point a run at a directory of its choosing.
 *
 * The places, in order:
 *
 *   root:   /run/sandbox-executable, and nothing else (/run is root's);
 *   others: /run/user/UID/sandbox-executable when /run/user/UID is the
 *           user's own directory with no rights for group or others (what
 *           systemd-logind makes);
 *           /tmp/sandbox-executable-UID unless someone else took the name
 *           first (anything there but a directory of the user's own: a
 *           name in a shared directory, which another user can make before
 *           the user's first run);
 *           HOME/.local/state/sandbox-executable, HOME the user's home
 *           directory in /etc/passwd when it is a directory of the user's
 *           own that nobody else can write (a place the user provably
 *           owns: nobody else can make it first).
 *
 * The state directory is the first of these; the later ones are where it
 * would move should an earlier one go (a logout removes /run/user/UID; a
 * reboot empties /tmp, and someone may take the name): every sandbox is
 * denied them all, and Go makes them in advance, so that no sandbox can
 * prepare one for a later run.
 */
#ifndef SE_STATEDIR_H
#define SE_STATEDIR_H

#include <limits.h>

#define SE_STATE_PLACES 3

struct se_state_where {
	int n; /* places found: place[0] is the state directory */
	char place[SE_STATE_PLACES][PATH_MAX];
	/* The state directory's parent, which must pass runstate's
	 * checkParent; "" when checking the state directory's own parent is
	 * implied by how it was chosen (the private runtime directory). */
	char parent[PATH_MAX];
	/* Why the /tmp place was passed over, "" when it was not. */
	char passed[PATH_MAX + 128];
};

/* se_state_where finds the places of euid's state directory, and returns
 * their number (0: none can be had, and passed says why). With all unset
 * it stops at the first (the state directory), as a lookup needs; with
 * all set it lists every later place too. */
int se_state_where(unsigned euid, int all, struct se_state_where *w);

#endif
