/*
 * The recipe key's reading of /proc/self/status (se_status_line,
 * recipekey.c): the lines it covers are found in whatever the kernel
 * wrote, on every start of the helper. The finder must stay within the
 * bytes read (no NUL after them) and return a whole line that begins with
 * the name asked for.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "recipekey.h"

static const char *const names[] = {
	"Uid:", "Gid:", "Groups:", "CapInh:", "CapPrm:", "CapEff:", "CapBnd:", "CapAmb:",
	"NoNewPrivs:", "Seccomp:", "Seccomp_filters:",
	"", /* the first line, whatever it is */
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size ? size : 1);
	CHECK(s != NULL);
	if (size)
		memcpy(s, data, size);
	for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
		const char *line = (const char *)1;
		size_t nl = strlen(names[k]);
		size_t len = se_status_line(s, size, names[k], &line);
		if (!line) {
			CHECK(len == 0);
			continue;
		}
		CHECK(line >= s && len <= size && (size_t)(line - s) <= size - len);
		CHECK(len >= nl && memcmp(line, names[k], nl) == 0);
		CHECK(memchr(line, '\n', len) == NULL);
		CHECK(line == s || line[-1] == '\n');
		CHECK(line + len == s + size || line[len] == '\n');
	}
	free(s);
	return 0;
}
