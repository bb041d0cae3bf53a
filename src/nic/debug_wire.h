/* SPDX-License-Identifier: MIT */
/*
 * The debug-attach protocol on a UNIX stream socket (a JTAG-to-AXI bridge
 * in software). Little-endian, fixed size:
 *   request  12 bytes: op (1 read, 2 write), 3 zero bytes, addr u32, value u32
 *   response  8 bytes: AXI response, 3 zero bytes, value u32
 */
#ifndef XR_NIC_DEBUG_WIRE_H
#define XR_NIC_DEBUG_WIRE_H

#define XR_DBG_OP_READ  1
#define XR_DBG_OP_WRITE 2
#define XR_DBG_REQ_LEN  12
#define XR_DBG_RESP_LEN 8

#endif
