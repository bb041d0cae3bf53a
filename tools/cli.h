/* SPDX-License-Identifier: MIT */
/* Argument parsing shared by the command-line tools: strict, with clear errors. */
#ifndef XR_TOOLS_CLI_H
#define XR_TOOLS_CLI_H

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Flushes stdout; false, with a message, if anything written to it was
 * lost: a `> file` on a full disk must not end truncated with exit 0. */
static inline bool cli_stdout_ok(const char *prog)
{
	errno = 0;
	if (fflush(stdout) == 0 && !ferror(stdout))
		return true;
	fprintf(stderr, "%s: error writing standard output%s%s\n", prog, errno ? ": " : "",
		errno ? strerror(errno) : "");
	return false;
}

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

/* A decimal number with an optional K/M/G/T suffix scaling it by k, k^2,
 * k^3, k^4, then an optional 'b'/'B' and "ps" (10Gbps, 64KB, 2.5G).
 * False on garbage, a negative value or infinity; prints nothing. */
static inline bool cli_scaled(const char *s, double k, double *out)
{
	char *end;
	double v;

	errno = 0;
	if (!s)
		return false;
	v = strtod(s, &end);
	if (end == s || errno || !(v >= 0) || isinf(v))
		return false;
	switch (*end) {
	case 'k': case 'K': v *= k; end++; break;
	case 'm': case 'M': v *= k * k; end++; break;
	case 'g': case 'G': v *= k * k * k; end++; break;
	case 't': case 'T': v *= k * k * k * k; end++; break;
	default: break;
	}
	if (*end == 'b' || *end == 'B')
		end++;
	if (!strcmp(end, "ps"))
		end += 2;
	*out = v;
	return *end == '\0';
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
