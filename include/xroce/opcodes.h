/* SPDX-License-Identifier: MIT */
/*
 * The opcode table: the single source of truth for every BTH opcode xroce
 * knows. The parser, the builder, the generator and the engine all derive
 * from it. Facts: IBTA vol.1 ch.9, rxe_opcode.c, ../shared/reference §4.
 */
#ifndef XROCE_OPCODES_H
#define XROCE_OPCODES_H

/*
 * Extended transport headers in their fixed wire order after the BTH.
 * X(NAME, size in bytes). The enum bit of a header is its position here, so
 * walking the bits from low to high walks the headers in wire order.
 */
#define XR_EXT_HDR_TABLE(X) \
	X(RDETH,   4)  /* RD only; in the order for completeness */ \
	X(DETH,    8)  /* Q_Key, SrcQP: UD */                     \
	X(RETH,   16)  /* VA, R_Key, DMA length */                \
	X(ATMETH, 28)  /* VA, R_Key, Swap/Add, Compare */         \
	X(AETH,    4)  /* syndrome, MSN */                        \
	X(ATMACK,  8)  /* original remote value */                \
	X(IMMDT,   4)  /* immediate data */                       \
	X(IETH,    4)  /* R_Key to invalidate */                  \
	X(CNP,    16)  /* 16 reserved zero bytes of a RoCE v2 CNP */

enum xr_ext_hdr_index {
#define XR_X(name, size) XR_EXT_##name##_INDEX,
	XR_EXT_HDR_TABLE(XR_X)
#undef XR_X
	XR_EXT_HDR_COUNT
};

enum xr_ext_hdr {
#define XR_X(name, size) XR_H_##name = 1u << XR_EXT_##name##_INDEX,
	XR_EXT_HDR_TABLE(XR_X)
#undef XR_X
};

/* How many payload bytes a packet of an opcode may carry. */
enum xr_payload_rule {
	XR_PAY_NONE,   /* no payload at all */
	XR_PAY_MTU,    /* exactly the path MTU (FIRST, MIDDLE) */
	XR_PAY_1_MTU,  /* 1..MTU (LAST) */
	XR_PAY_0_MTU,  /* 0..MTU (ONLY) */
};

/* Per-opcode properties. */
enum xr_op_flag {
	XR_OPF_REQ        = 1u << 0,  /* a request (requester -> responder) */
	XR_OPF_RESP       = 1u << 1,  /* a response (responder -> requester) */
	XR_OPF_RWQE       = 1u << 2,  /* consumes a receive WQE at the responder */
	XR_OPF_FIRST      = 1u << 3,  /* starts a message */
	XR_OPF_MIDDLE     = 1u << 4,
	XR_OPF_LAST       = 1u << 5,  /* ends a message */
	XR_OPF_SEND       = 1u << 6,
	XR_OPF_WRITE      = 1u << 7,
	XR_OPF_READ       = 1u << 8,  /* RDMA READ request */
	XR_OPF_READ_RESP  = 1u << 9,
	XR_OPF_ACK        = 1u << 10,
	XR_OPF_ATOMIC     = 1u << 11,
	XR_OPF_ATOMIC_ACK = 1u << 12,
	XR_OPF_IMM        = 1u << 13, /* carries immediate data */
	XR_OPF_INV        = 1u << 14, /* carries an R_Key to invalidate */
	XR_OPF_CNP        = 1u << 15, /* congestion notification */
	XR_OPF_ONLY       = XR_OPF_FIRST | XR_OPF_LAST,
};

/* Shorthands that keep the table one line per opcode. */
#define XR_RQ_(f)  (XR_OPF_REQ | (f))
#define XR_RS_(f)  (XR_OPF_RESP | (f))

/*
 * X(value, NAME, headers after BTH, payload rule, flags)
 * NAME is "<transport>_<operation>" with the IBTA operation name.
 */
#define XR_OPCODE_TABLE(X) \
	X(0x00, RC_SEND_FIRST,                     0,                   XR_PAY_MTU,   XR_RQ_(XR_OPF_SEND | XR_OPF_FIRST | XR_OPF_RWQE)) \
	X(0x01, RC_SEND_MIDDLE,                    0,                   XR_PAY_MTU,   XR_RQ_(XR_OPF_SEND | XR_OPF_MIDDLE)) \
	X(0x02, RC_SEND_LAST,                      0,                   XR_PAY_1_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_LAST)) \
	X(0x03, RC_SEND_LAST_WITH_IMMEDIATE,       XR_H_IMMDT,          XR_PAY_1_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_LAST | XR_OPF_IMM)) \
	X(0x04, RC_SEND_ONLY,                      0,                   XR_PAY_0_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_ONLY | XR_OPF_RWQE)) \
	X(0x05, RC_SEND_ONLY_WITH_IMMEDIATE,       XR_H_IMMDT,          XR_PAY_0_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_ONLY | XR_OPF_RWQE | XR_OPF_IMM)) \
	X(0x06, RC_RDMA_WRITE_FIRST,               XR_H_RETH,           XR_PAY_MTU,   XR_RQ_(XR_OPF_WRITE | XR_OPF_FIRST)) \
	X(0x07, RC_RDMA_WRITE_MIDDLE,              0,                   XR_PAY_MTU,   XR_RQ_(XR_OPF_WRITE | XR_OPF_MIDDLE)) \
	X(0x08, RC_RDMA_WRITE_LAST,                0,                   XR_PAY_1_MTU, XR_RQ_(XR_OPF_WRITE | XR_OPF_LAST)) \
	X(0x09, RC_RDMA_WRITE_LAST_WITH_IMMEDIATE, XR_H_IMMDT,          XR_PAY_1_MTU, XR_RQ_(XR_OPF_WRITE | XR_OPF_LAST | XR_OPF_RWQE | XR_OPF_IMM)) \
	X(0x0A, RC_RDMA_WRITE_ONLY,                XR_H_RETH,           XR_PAY_0_MTU, XR_RQ_(XR_OPF_WRITE | XR_OPF_ONLY)) \
	X(0x0B, RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, XR_H_RETH | XR_H_IMMDT, XR_PAY_0_MTU, XR_RQ_(XR_OPF_WRITE | XR_OPF_ONLY | XR_OPF_RWQE | XR_OPF_IMM)) \
	X(0x0C, RC_RDMA_READ_REQUEST,              XR_H_RETH,           XR_PAY_NONE,  XR_RQ_(XR_OPF_READ | XR_OPF_ONLY)) \
	X(0x0D, RC_RDMA_READ_RESPONSE_FIRST,       XR_H_AETH,           XR_PAY_MTU,   XR_RS_(XR_OPF_READ_RESP | XR_OPF_FIRST)) \
	X(0x0E, RC_RDMA_READ_RESPONSE_MIDDLE,      0,                   XR_PAY_MTU,   XR_RS_(XR_OPF_READ_RESP | XR_OPF_MIDDLE)) \
	X(0x0F, RC_RDMA_READ_RESPONSE_LAST,        XR_H_AETH,           XR_PAY_1_MTU, XR_RS_(XR_OPF_READ_RESP | XR_OPF_LAST)) \
	X(0x10, RC_RDMA_READ_RESPONSE_ONLY,        XR_H_AETH,           XR_PAY_0_MTU, XR_RS_(XR_OPF_READ_RESP | XR_OPF_ONLY)) \
	X(0x11, RC_ACKNOWLEDGE,                    XR_H_AETH,           XR_PAY_NONE,  XR_RS_(XR_OPF_ACK | XR_OPF_ONLY)) \
	X(0x12, RC_ATOMIC_ACKNOWLEDGE,             XR_H_AETH | XR_H_ATMACK, XR_PAY_NONE, XR_RS_(XR_OPF_ATOMIC_ACK | XR_OPF_ONLY)) \
	X(0x13, RC_COMPARE_SWAP,                   XR_H_ATMETH,         XR_PAY_NONE,  XR_RQ_(XR_OPF_ATOMIC | XR_OPF_ONLY)) \
	X(0x14, RC_FETCH_ADD,                      XR_H_ATMETH,         XR_PAY_NONE,  XR_RQ_(XR_OPF_ATOMIC | XR_OPF_ONLY)) \
	X(0x16, RC_SEND_LAST_WITH_INVALIDATE,      XR_H_IETH,           XR_PAY_1_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_LAST | XR_OPF_INV)) \
	X(0x17, RC_SEND_ONLY_WITH_INVALIDATE,      XR_H_IETH,           XR_PAY_0_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_ONLY | XR_OPF_RWQE | XR_OPF_INV)) \
	X(0x20, UC_SEND_FIRST,                     0,                   XR_PAY_MTU,   XR_RQ_(XR_OPF_SEND | XR_OPF_FIRST | XR_OPF_RWQE)) \
	X(0x21, UC_SEND_MIDDLE,                    0,                   XR_PAY_MTU,   XR_RQ_(XR_OPF_SEND | XR_OPF_MIDDLE)) \
	X(0x22, UC_SEND_LAST,                      0,                   XR_PAY_1_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_LAST)) \
	X(0x23, UC_SEND_LAST_WITH_IMMEDIATE,       XR_H_IMMDT,          XR_PAY_1_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_LAST | XR_OPF_IMM)) \
	X(0x24, UC_SEND_ONLY,                      0,                   XR_PAY_0_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_ONLY | XR_OPF_RWQE)) \
	X(0x25, UC_SEND_ONLY_WITH_IMMEDIATE,       XR_H_IMMDT,          XR_PAY_0_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_ONLY | XR_OPF_RWQE | XR_OPF_IMM)) \
	X(0x26, UC_RDMA_WRITE_FIRST,               XR_H_RETH,           XR_PAY_MTU,   XR_RQ_(XR_OPF_WRITE | XR_OPF_FIRST)) \
	X(0x27, UC_RDMA_WRITE_MIDDLE,              0,                   XR_PAY_MTU,   XR_RQ_(XR_OPF_WRITE | XR_OPF_MIDDLE)) \
	X(0x28, UC_RDMA_WRITE_LAST,                0,                   XR_PAY_1_MTU, XR_RQ_(XR_OPF_WRITE | XR_OPF_LAST)) \
	X(0x29, UC_RDMA_WRITE_LAST_WITH_IMMEDIATE, XR_H_IMMDT,          XR_PAY_1_MTU, XR_RQ_(XR_OPF_WRITE | XR_OPF_LAST | XR_OPF_RWQE | XR_OPF_IMM)) \
	X(0x2A, UC_RDMA_WRITE_ONLY,                XR_H_RETH,           XR_PAY_0_MTU, XR_RQ_(XR_OPF_WRITE | XR_OPF_ONLY)) \
	X(0x2B, UC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, XR_H_RETH | XR_H_IMMDT, XR_PAY_0_MTU, XR_RQ_(XR_OPF_WRITE | XR_OPF_ONLY | XR_OPF_RWQE | XR_OPF_IMM)) \
	X(0x64, UD_SEND_ONLY,                      XR_H_DETH,           XR_PAY_0_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_ONLY | XR_OPF_RWQE)) \
	X(0x65, UD_SEND_ONLY_WITH_IMMEDIATE,       XR_H_DETH | XR_H_IMMDT, XR_PAY_0_MTU, XR_RQ_(XR_OPF_SEND | XR_OPF_ONLY | XR_OPF_RWQE | XR_OPF_IMM)) \
	X(0x81, CNP,                               XR_H_CNP,            XR_PAY_NONE,  XR_OPF_CNP)

enum xr_opcode {
#define XR_X(val, name, hdrs, pay, flags) XR_OP_##name = (val),
	XR_OPCODE_TABLE(XR_X)
#undef XR_X
};

/* Transport service in opcode bits [7:5]. */
enum xr_transport {
	XR_TRANSPORT_RC  = 0,
	XR_TRANSPORT_UC  = 1,
	XR_TRANSPORT_RD  = 2,
	XR_TRANSPORT_UD  = 3,
	XR_TRANSPORT_CNP = 4,
};

#endif
