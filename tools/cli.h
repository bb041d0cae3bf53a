/* SPDX-License-Identifier: MIT */
/* Argument parsing shared by the command-line tools: strict, with clear errors. */
#ifndef XR_TOOLS_CLI_H
#define XR_TOOLS_CLI_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* Parses a whole-string unsigned number (decimal, 0x hex, 0 octal) <= max.
 * On error prints "PROG: bad VALUE for --OPT" and returns false. */
static inline bool cli_u64(const char *prog, const char *opt, const char *s,
			   uint64_t max, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	if (!s || !*s || *s == '-')
		goto bad;
	v = strtoull(s, &end, 0);
	if (errno || *end || v > max)
		goto bad;
	*out = v;
	return true;
bad:
	fprintf(stderr, "%s: bad value '%s' for --%s (expected 0..%llu)\n",
		prog, s ? s : "", opt, (unsigned long long)max);
	return false;
}

static inline bool cli_mac(const char *prog, const char *opt, const char *s, uint8_t mac[6])
{
	unsigned v[6];
	char tail;

	if (sscanf(s, "%x:%x:%x:%x:%x:%x%c", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &tail) != 6)
		goto bad;
	for (int i = 0; i < 6; i++) {
		if (v[i] > 0xFF)
			goto bad;
		mac[i] = (uint8_t)v[i];
	}
	return true;
bad:
	fprintf(stderr, "%s: bad MAC '%s' for --%s (expected aa:bb:cc:dd:ee:ff)\n", prog, s, opt);
	return false;
}

#endif
