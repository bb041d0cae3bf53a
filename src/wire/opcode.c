/* SPDX-License-Identifier: MIT */
/* The opcode table, expanded from XR_OPCODE_TABLE, and lookups on it. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "xroce/wire.h"

enum {
#define XR_X(name, size) XR_EXT_##name##_SIZE = (size),
	XR_EXT_HDR_TABLE(XR_X)
#undef XR_X
};

static const uint8_t ext_size[XR_EXT_HDR_COUNT] = {
#define XR_X(name, size) [XR_EXT_##name##_INDEX] = (size),
	XR_EXT_HDR_TABLE(XR_X)
#undef XR_X
};

static const char *const ext_name[XR_EXT_HDR_COUNT] = {
#define XR_X(name, size) [XR_EXT_##name##_INDEX] = #name,
	XR_EXT_HDR_TABLE(XR_X)
#undef XR_X
};

/* Bytes of extended headers for a header set, as a constant expression
 * (a test checks it against the walk in xr_ext_hdr_offset). */
#define HDR_LEN(h)                                                           \
	+ (((h) & XR_H_RDETH)  ? XR_EXT_RDETH_SIZE  : 0)                     \
	+ (((h) & XR_H_DETH)   ? XR_EXT_DETH_SIZE   : 0)                     \
	+ (((h) & XR_H_RETH)   ? XR_EXT_RETH_SIZE   : 0)                     \
	+ (((h) & XR_H_ATMETH) ? XR_EXT_ATMETH_SIZE : 0)                     \
	+ (((h) & XR_H_AETH)   ? XR_EXT_AETH_SIZE   : 0)                     \
	+ (((h) & XR_H_ATMACK) ? XR_EXT_ATMACK_SIZE : 0)                     \
	+ (((h) & XR_H_IMMDT)  ? XR_EXT_IMMDT_SIZE  : 0)                     \
	+ (((h) & XR_H_IETH)   ? XR_EXT_IETH_SIZE   : 0)                     \
	+ (((h) & XR_H_CNP)    ? XR_EXT_CNP_SIZE    : 0)
_Static_assert(XR_EXT_HDR_COUNT == 9, "HDR_LEN must name every header");

static const struct xr_opcode_info opcode_table[] = {
#define XR_X(val, name, hdrs, pay, flags) \
	{ (val), #name, (hdrs), (pay), (flags), (uint8_t)(0 HDR_LEN(hdrs)) },
	XR_OPCODE_TABLE(XR_X)
#undef XR_X
};

enum {
#define XR_X(val, name, hdrs, pay, flags) SLOT_##name,
	XR_OPCODE_TABLE(XR_X)
#undef XR_X
};

#define OPCODE_COUNT (sizeof(opcode_table) / sizeof(opcode_table[0]))

/* opcode -> index + 1 (0 = unknown), so lookup is one load. */
static const uint8_t opcode_slot[256] = {
#define XR_X(val, name, hdrs, pay, flags) [(val)] = 1 + SLOT_##name,
	XR_OPCODE_TABLE(XR_X)
#undef XR_X
};

const struct xr_opcode_info *xr_opcode_info(uint8_t opcode)
{
	unsigned slot = opcode_slot[opcode];
	return slot ? &opcode_table[slot - 1] : NULL;
}

const struct xr_opcode_info *xr_opcode_all(size_t *count)
{
	if (count)
		*count = OPCODE_COUNT;
	return opcode_table;
}

int xr_opcode_by_name(const char *name)
{
	char *end;
	long v;

	if (!name || !*name)
		return -1;
	v = strtol(name, &end, 0);
	if (*end == '\0')
		return (v >= 0 && v <= 255 && xr_opcode_info((uint8_t)v)) ? (int)v : -1;
	for (size_t i = 0; i < OPCODE_COUNT; i++) {
		const char *n = opcode_table[i].name;
		if (!strcasecmp(n, name))
			return opcode_table[i].opcode;
		/* A bare operation name means RC. */
		if (!strncmp(n, "RC_", 3) && !strcasecmp(n + 3, name))
			return opcode_table[i].opcode;
	}
	return -1;
}

static int ext_index(enum xr_ext_hdr h)
{
	if (!h || (h & (h - 1)) || h >= (1u << XR_EXT_HDR_COUNT))
		return -1;
	return __builtin_ctz(h);
}

size_t xr_ext_hdr_size(enum xr_ext_hdr h)
{
	int i = ext_index(h);
	return i < 0 ? 0 : ext_size[i];
}

const char *xr_ext_hdr_name(enum xr_ext_hdr h)
{
	int i = ext_index(h);
	return i < 0 ? "?" : ext_name[i];
}

int xr_ext_hdr_offset(const struct xr_opcode_info *op, enum xr_ext_hdr h)
{
	int idx = ext_index(h), off = 0;

	if (!op || idx < 0 || !(op->hdrs & h))
		return -1;
	for (int i = 0; i < idx; i++)
		if (op->hdrs & (1u << i))
			off += ext_size[i];
	return off;
}
