/*
 * CHECK for the harnesses: a property that fails is a finding, reported
 * and ended like a sanitizer's (libFuzzer saves the input).
 */
#ifndef SE_FUZZ_CHECK_H
#define SE_FUZZ_CHECK_H

#include <stdio.h>
#include <stdlib.h>

#define CHECK(cond)                                                                                 \
	do {                                                                                        \
		if (!(cond)) {                                                                      \
			fprintf(stderr, "fuzz: %s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                    \
		}                                                                                   \
	} while (0)

#endif
