/* SPDX-License-Identifier: MIT */
/* Descriptions of every register, generated from the tables in regmap.h,
 * and the register reference document made from them. */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "regmap_internal.h"

static const struct xr_reg_desc plain_regs[] = {
#define XR_X(name, off, acc, rst, fields, desc) { #name, (off), (acc), (rst), (fields), (desc), 1, 4 },
	XR_REG_TABLE(XR_X)
#undef XR_X
#define XR_X(name, base, count, stride, acc, fields, desc) \
	{ #name, (base), (acc), 0, (fields), (desc), (count), (stride) },
	XR_REG_ARRAY_TABLE(XR_X)
#undef XR_X
};
#define N_PLAIN (sizeof(plain_regs) / sizeof(plain_regs[0]))

static const char *const counter_names[] = {
#define XR_X(e, name, desc) name,
	XR_COUNTER_TABLE(XR_X)
#undef XR_X
};
static const char *const counter_descs[] = {
#define XR_X(e, name, desc) desc,
	XR_COUNTER_TABLE(XR_X)
#undef XR_X
};
#define N_TABLE_COUNTERS (sizeof(counter_names) / sizeof(counter_names[0]))

static const char *const event_names[] = {
#define XR_X(e, name, a0, a1) name,
	XR_EVENT_TABLE(XR_X)
#undef XR_X
};
static const char *const event_args[][2] = {
#define XR_X(e, name, a0, a1) { a0, a1 },
	XR_EVENT_TABLE(XR_X)
#undef XR_X
};
static const char *const cmd_status_descs[] = {
#define XR_X(name, desc) desc,
	XR_CMD_STATUS_TABLE(XR_X)
#undef XR_X
};

/* Every register: plain ones, arrays, then each counter's LO and HI. */
static struct xr_reg_desc all_regs[N_PLAIN + 2 * XR_CNT_COUNT];
static char counter_name_buf[XR_CNT_COUNT][48];
static char counter_reg_name[2 * XR_CNT_COUNT][56];
static char counter_reg_desc[2 * XR_CNT_COUNT][160];
/* Offsets below this map straight to a description. */
#define DIRECT_LIMIT 0x400
static const struct xr_reg_desc *by_offset[DIRECT_LIMIT / 4];
/* The arrays (doorbells, table windows): a doorbell per posted WQE looks
 * one up, so they are searched alone, not among every plain register. */
#define N_ARRAYS (sizeof((const struct xr_reg_desc *[]){ \
	XR_REG_ARRAY_TABLE(XR_ARRAY_ONE) }) / sizeof(const struct xr_reg_desc *))
#define XR_ARRAY_ONE(name, base, count, stride, acc, fields, desc) NULL,
static const struct xr_reg_desc *arrays[N_ARRAYS];
/* Each array's stride a power of two: an offset's place in it is a mask,
 * not a division (xr_reg_by_offset, once per doorbell). */
#define XR_ARRAY_POW2(name, base, count, stride, acc, fields, desc) \
	_Static_assert((stride) > 0 && ((stride) & ((stride) - 1)) == 0, #name ": stride not a power of two");
XR_REG_ARRAY_TABLE(XR_ARRAY_POW2)

/* Runs before any other constructor that looks registers up. */
__attribute__((constructor(101)))
static void regmap_init(void)
{
	size_t n = 0, narrays = 0;

	for (size_t i = 0; i < N_PLAIN; i++) {
		all_regs[n++] = plain_regs[i];
		if (plain_regs[i].count == 1 && plain_regs[i].offset < DIRECT_LIMIT)
			by_offset[plain_regs[i].offset / 4] = &all_regs[n - 1];
		else if (plain_regs[i].count > 1 && narrays < N_ARRAYS)
			arrays[narrays++] = &all_regs[n - 1];
	}
	for (unsigned c = 0; c < XR_CNT_COUNT; c++) {
		const char *cname = xr_counter_name(c);
		for (int hi = 0; hi < 2; hi++) {
			unsigned k = 2 * c + (unsigned)hi;
			snprintf(counter_reg_name[k], sizeof(counter_reg_name[k]), "%s_%s", cname, hi ? "hi" : "lo");
			snprintf(counter_reg_desc[k], sizeof(counter_reg_desc[k]), "%s (%s 32 bits%s)",
				 xr_counter_desc(c), hi ? "high" : "low",
				 hi ? ", latched by the low read" : "");
			all_regs[n++] = (struct xr_reg_desc){
				counter_reg_name[k], XR_COUNTER_BASE + 8 * c + 4 * (unsigned)hi, XR_RO, 0, "",
				counter_reg_desc[k], 1, 4 };
		}
	}
}

const struct xr_reg_desc *xr_reg_descs(size_t *count)
{
	if (count)
		*count = N_PLAIN + 2 * XR_CNT_COUNT;
	return all_regs;
}

const struct xr_reg_desc *xr_reg_by_offset(uint32_t off)
{
	if (off & 3)
		return NULL;
	if (off < DIRECT_LIMIT)
		return by_offset[off / 4];
	if (off >= XR_COUNTER_BASE && off < XR_COUNTER_BASE + 8 * XR_CNT_COUNT)
		return &all_regs[N_PLAIN + (off - XR_COUNTER_BASE) / 4];
	for (size_t i = 0; i < N_ARRAYS; i++) {
		const struct xr_reg_desc *d = arrays[i];
		if (d && off >= d->offset && off < d->offset + d->count * d->stride &&
		    ((off - d->offset) & (d->stride - 1)) == 0)
			return d;
	}
	return NULL;
}

const struct xr_reg_desc *xr_reg_by_name(const char *name)
{
	size_t n;
	const struct xr_reg_desc *d = xr_reg_descs(&n);

	if (!name)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (!strcasecmp(d[i].name, name))
			return &d[i];
	return NULL;
}

const char *xr_counter_name(enum xr_counter c)
{
	if ((unsigned)c >= XR_CNT_COUNT)
		return "?";
	if (c < N_TABLE_COUNTERS)
		return counter_names[c];
	if (!counter_name_buf[c][0]) {
		/* rx_drop_<parse reason in lower case> */
		const char *r = xr_parse_err_name((enum xr_parse_err)(c - XR_CNT_PARSE_TRUNCATED_L2 + XR_PARSE_TRUNCATED_L2));
		int k = snprintf(counter_name_buf[c], sizeof(counter_name_buf[c]), "rx_drop_%s", r);
		for (int i = 8; i < k; i++)
			counter_name_buf[c][i] = (char)tolower((unsigned char)counter_name_buf[c][i]);
	}
	return counter_name_buf[c];
}

const char *xr_counter_desc(enum xr_counter c)
{
	if ((unsigned)c >= XR_CNT_COUNT)
		return "?";
	if (c < N_TABLE_COUNTERS)
		return counter_descs[c];
	return xr_parse_err_desc((enum xr_parse_err)(c - XR_CNT_PARSE_TRUNCATED_L2 + XR_PARSE_TRUNCATED_L2));
}

const char *xr_event_name(enum xr_event_type t)
{
	return (unsigned)t < XR_EV_COUNT ? event_names[t] : "?";
}

const char *xr_cmd_status_desc(enum xr_cmd_status s)
{
	return (unsigned)s < sizeof(cmd_status_descs) / sizeof(cmd_status_descs[0]) ? cmd_status_descs[s] : "?";
}

const char *xr_access_name(enum xr_reg_access a)
{
	static const char *const names[] = { "RW", "RO", "W1C", "WO" };
	return (unsigned)a < 4 ? names[a] : "?";
}

const char *xr_axi_resp_name(int resp)
{
	static const char *const names[] = { "OKAY", "EXOKAY", "SLVERR", "DECERR" };
	return (resp >= 0 && resp < 4) ? names[resp] : "TRANSPORT-ERROR";
}

int xr_reg_field(const struct xr_reg_desc *d, const char *field, unsigned *lo, unsigned *width)
{
	const char *p = d ? d->fields : NULL;
	size_t flen = strlen(field);

	while (p && *p) {
		const char *colon = strchr(p, ':');
		const char *end = strchr(p, ' ');
		if (!end)
			end = p + strlen(p);
		if (colon && colon < end && (size_t)(colon - p) == flen && !strncmp(p, field, flen)) {
			char *q;
			*lo = (unsigned)strtoul(colon + 1, &q, 10);
			*width = (*q == ':') ? (unsigned)strtoul(q + 1, NULL, 10) : 1;
			return 0;
		}
		p = *end ? end + 1 : end;
	}
	return -ENOENT;
}

/* ---- the register reference ---- */

static void write_fields(FILE *f, const char *fields)
{
	const char *p = fields;

	if (!*p) {
		fprintf(f, "–");
		return;
	}
	while (*p) {
		const char *end = strchr(p, ' ');
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char item[64], *c1, *c2;
		snprintf(item, sizeof(item), "%.*s", (int)len, p);
		c1 = strchr(item, ':');
		if (c1) {
			*c1 = '\0';
			c2 = strchr(c1 + 1, ':');
			if (c2) {
				unsigned lo = (unsigned)atoi(c1 + 1), w = (unsigned)atoi(c2 + 1);
				fprintf(f, "`%s` [%u:%u]", item, lo + w - 1, lo);
			} else {
				fprintf(f, "`%s` [%s]", item, c1 + 1);
			}
		}
		p += len;
		if (*p) {
			fprintf(f, ", ");
			p++;
		}
	}
}

int xr_regmap_write_doc(FILE *f)
{
	size_t n;
	const struct xr_reg_desc *d = xr_reg_descs(&n);

	fprintf(f, "# xroce register map\n\n"
		"Generated from `include/xroce/regmap.h` by `xroce-regs doc`; a test fails when this\n"
		"file is stale (`make docs` regenerates it).\n\n"
		"All registers are 32 bits wide at 4-byte-aligned offsets. Accesses answer as an\n"
		"AXI-Lite slave: OKAY; SLVERR for a write to a read-only register, a bad value or a\n"
		"refused command; DECERR for an unmapped or misaligned address. Every error is\n"
		"counted (`reg_slverr`, `reg_decerr`) and logged (`reg_error` event).\n\n"
		"Access: RW read/write, RO read-only, WO write-only (reads return 0), W1C write 1 to clear.\n\n"
		"Map version: %u.%u. ID magic: 0x%08X.\n\n", XR_REGMAP_VERSION >> 16,
		XR_REGMAP_VERSION & 0xFFFF, XR_REG_ID_MAGIC);
	fprintf(f, "## Registers\n\n| Offset | Name | Access | Reset | Fields | Description |\n"
		"|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		if (d[i].count > 1 || d[i].offset >= XR_COUNTER_BASE)
			continue;
		fprintf(f, "| 0x%04X | %s | %s | 0x%08X | ", d[i].offset, d[i].name,
			xr_access_name(d[i].access), d[i].reset);
		write_fields(f, d[i].fields);
		fprintf(f, " | %s |\n", d[i].desc);
	}
	fprintf(f, "\n## Doorbells (one register per QP or CQ)\n\n| Base | Name | Count | Stride | Access | Fields | Description |\n"
		"|---|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < n; i++) {
		if (d[i].count <= 1)
			continue;
		fprintf(f, "| 0x%06X | %s | %u | %u | %s | ", d[i].offset, d[i].name, d[i].count,
			d[i].stride, xr_access_name(d[i].access));
		write_fields(f, d[i].fields);
		fprintf(f, " | %s |\n", d[i].desc);
	}
	fprintf(f, "\n## Counters (read-only, 64 bits)\n\n"
		"Counter *i* is at 0x%04X + 8*i (low word) and +4 (high word). Reading the low word\n"
		"latches the high word, so read low then high. `CNT_CTRL.clear` zeroes them all;\n"
		"soft reset does too.\n\n| Offset | Counter | Description |\n|---|---|---|\n", XR_COUNTER_BASE);
	for (unsigned c = 0; c < XR_CNT_COUNT; c++)
		fprintf(f, "| 0x%04X | %s | %s |\n", XR_COUNTER_BASE + 8 * c, xr_counter_name(c), xr_counter_desc(c));
	fprintf(f, "\n## Event types (EVLOG_TYPE)\n\n| Type | Name | ARG0 | ARG1 |\n|---|---|---|---|\n");
	for (unsigned t = 0; t < XR_EV_COUNT; t++)
		fprintf(f, "| %u | %s | %s | %s |\n", t, event_names[t], event_args[t][0], event_args[t][1]);
	fprintf(f, "\n## Command status (QP_CMD_STATUS)\n\n| Value | Meaning |\n|---|---|\n");
	for (unsigned s = 0; s < sizeof(cmd_status_descs) / sizeof(cmd_status_descs[0]); s++)
		fprintf(f, "| %u | %s |\n", s, cmd_status_descs[s]);
	fprintf(f, "\n## Bring-up sequence\n\n"
		"1. Write CTRL.soft_reset = 1 (its power-on value): clears all QP, MR, CQ, counter and event state.\n"
		"2. Configure MAC_LOW/MAC_HIGH, IP_ADDR and/or IPV6_ADDR_*, UDP_PORT, and the PEER_* defaults.\n"
		"3. Create CQs (CQ window), then QPs in RESET (QP window + QP_CMD COMMIT).\n"
		"4. Register MRs (MR window + MR_CMD COMMIT; read the keys back).\n"
		"5. Write CTRL = enable (soft_reset 0). Refused with SLVERR while the link is down or no\n"
		"   local address is set; STATUS.not_ready says why.\n");
	return ferror(f) ? -EIO : 0;
}
