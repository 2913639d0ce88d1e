/*
 * The warm path: a run of an invocation seen before, carried out before the
 * Go runtime starts. An earlier run of the same invocation (the same recipe
 * key: recipekey.c) was decided by Go, which stored its recipe together with
 * everything the decision read from the filesystem (fsdeps, deps.c),
 * authenticated under the user's key (recipestore.c). When that entry is
 * there and every dependency still holds (checked by the runner once it
 * has cloned the init, deps_hold), the runner carries the recipe out and
 * the Go runtime never starts: the runner exits with the program's
 * status. When the run needs Go (socket mediation, the proxy, a report),
 * the runner goes on in a thread of its own and the constructor returns:
 * Go starts and serves it from the service record stored with the recipe,
 * deciding nothing (warm.go). When the entry is missing, stale or refused,
 * Go decides as always.
 */
#define _GNU_SOURCE
#include "recipe.h"
#include "recipekey.h"
#include "recipestore.h"
#include "decider.h"
#include "deps.h"
#include "phases.h"

#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static struct se_handover se_warm_h;
static int se_warm_state; /* 0: no warm run; 1: the runner started nothing; 2: Go serves the run */
static unsigned char *se_warm_body;
static size_t se_warm_record_off, se_warm_record_len;

/* say writes one line to stderr when SANDBOX_EXECUTABLE_WARM=debug asked
 * what the warm path does (and only then: stderr is the program's). */
static void say(int debug, const char *what)
{
	if (!debug)
		return;
	char line[256];
	int n = snprintf(line, sizeof line, "sandbox-executable: warm path: %s\n", what);
	if (n > 0)
		(void)!write(2, line, (size_t)(n < (int)sizeof line ? n : (int)sizeof line - 1));
}

/* What deps_hold checks: the stored dependencies (fsdeps, deps.c). */
struct deps_check {
	const unsigned char *deps;
	size_t len;
	int debug;
};

/* deps_hold is se_run's se_holds_fn: whether everything the decision read
 * from the filesystem is still as it was. */
static int deps_hold(void *arg)
{
	const struct deps_check *d = arg;
	long index = 0;
	int reason = 0;
	if (se_deps_check_ex(d->deps, d->len, &index, &reason)) {
		say(d->debug, "carrying out the stored recipe");
		return 1;
	}
	if (d->debug) {
		char line[160];
		snprintf(line, sizeof line, "what the decision read changed: dependency %ld (reason %d)", index, reason);
		say(1, line);
	}
	return 0;
}

/* Priority: after se_capture_initial_state (101), the key (102) and the
 * signals' block (105). */
__attribute__((constructor(110))) static void se_warm_run(void)
{
	unsigned char key[32];
	int prog;
	unsigned char *body = NULL;
	size_t len = 0;
	const char *mode = getenv("SANDBOX_EXECUTABLE_WARM");
	int debug = mode && strcmp(mode, "debug") == 0;
	if (mode && strcmp(mode, "off") == 0)
		return;
	if (!se_recipe_key(key, &prog)) {
		say(debug, "no recipe key (no \"--\", or an input unreadable)");
		return;
	}
	/* A closed standard fd is one the Go runtime would open on /dev/null
	 * before a run it decides: such a start is Go's. */
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) < 0) {
			say(debug, "a standard descriptor is closed");
			return;
		}
	}
	char **argv = se_recipe_argv();
	if (!argv || prog <= 0 || !argv[prog])
		return;
	se_phase("key");
	if (!se_recipe_lookup(key, &body, &len)) {
		say(debug, "no stored recipe for this invocation");
		/* A resident decider named in the environment decides and
		 * stores; the run then looks its own key up again. */
		const char *decider = getenv(SE_DECIDER_ENV);
		if (!decider || decider[0] != '/')
			return;
		int asked = se_ask_decider(decider, se_recipe_argc(), argv, se_recipe_envp());
		if (asked <= 0) {
			say(debug, asked < 0 ? "no answer from the decider" : "the decider stored nothing");
			return;
		}
		se_phase("decider");
		if (!se_recipe_lookup(key, &body, &len)) {
			say(debug, "the decider stored an entry, but not under this run's key");
			return;
		}
		say(debug, "the decider stored the recipe");
	}
	struct se_stored_parts part;
	if (!se_stored_split(body, len, &part))
		goto out;
	se_phase("lookup");
	/* malloc is 16-aligned: the runner reads the recipe's records in place. */
	void *recipe = malloc(part.recipe_len ? part.recipe_len : 1);
	if (!recipe)
		goto out;
	memcpy(recipe, body + part.recipe_off, part.recipe_len);
	if (!se_recipe_check(recipe, part.recipe_len)) {
		free(recipe);
		goto out;
	}
	struct deps_check dc = {body + part.deps_off, part.deps_len, debug};
	se_phases_warm_run(1);
	se_run(recipe, argv + prog, deps_hold, &dc, NULL, &se_warm_h);
	/* Back here: the runner started nothing (Go decides again), or the
	 * run goes on in the runner's own thread and Go serves it. */
	se_phases_warm_run(0);
	if (se_warm_h.reason == SE_RET_SERVE) {
		se_warm_state = 2;
		se_warm_body = body;
		se_warm_record_off = part.record_off;
		se_warm_record_len = part.record_len;
		say(debug, "the run needs Go: it serves it");
		return; /* the recipe and the body stay: the run's thread reads them */
	}
	free(recipe);
	if (!se_warm_h.stale) {
		se_warm_state = 1;
		if (debug) {
			char line[200];
			snprintf(line, sizeof line, "the runner started nothing (%s)", se_warm_h.fail_what);
			say(1, line);
		}
	}
out:
	free(body);
}

/* se_warm reports what the warm path did: 0 nothing, 1 the runner started
 * nothing, 2 Go serves the run (*svc, and the stored service record). */
int se_warm(struct se_service **svc, const void **record, size_t *len)
{
	*svc = se_warm_h.svc;
	*record = se_warm_body ? se_warm_body + se_warm_record_off : NULL;
	*len = se_warm_record_len;
	return se_warm_state;
}
