#define _GNU_SOURCE
#include "phases.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define SE_MAX_PHASES 24

static struct {
	int on, warm, n;
	int64_t start, last;
	struct {
		const char *name;
		int64_t ns;
	} p[SE_MAX_PHASES];
} se_ph;

static int64_t se_ph_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void se_phases_begin(void)
{
	const char *mode = getenv("SANDBOX_EXECUTABLE_WARM");
	if (!mode || strcmp(mode, "debug") != 0)
		return;
	se_ph.on = 1;
	se_ph.start = se_ph.last = se_ph_now();
}

void se_phase(const char *name)
{
	if (!se_ph.on || se_ph.n >= SE_MAX_PHASES)
		return;
	int64_t now = se_ph_now();
	se_ph.p[se_ph.n].name = name;
	se_ph.p[se_ph.n].ns = now - se_ph.last;
	se_ph.n++;
	se_ph.last = now;
}

void se_phases_warm_run(int warm)
{
	se_ph.warm = warm;
}

void se_phases_say(void)
{
	if (!se_ph.on || !se_ph.warm)
		return;
	char line[1024];
	size_t n = (size_t)snprintf(line, sizeof line, "sandbox-executable: warm path: time in us:");
	for (int i = 0; i < se_ph.n && n < sizeof line; i++)
		n += (size_t)snprintf(line + n, sizeof line - n, "%s %s %lld", i ? "," : "", se_ph.p[i].name,
				      (long long)(se_ph.p[i].ns / 1000));
	if (n < sizeof line)
		n += (size_t)snprintf(line + n, sizeof line - n, "; total %lld\n", (long long)((se_ph.last - se_ph.start) / 1000));
	if (n >= sizeof line) {
		n = sizeof line - 1;
		line[n - 1] = '\n';
	}
	(void)!write(2, line, n);
}
