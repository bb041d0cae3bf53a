"""Judgements of divergence kinds seen by diff_rxe.py (regex on the kind ->
text). (a) xroce departs from the spec; (b) rxe departs from the spec;
(c) both are legal. Sources: shared/reference/transport-rules.md (rule
numbers), docs/conformance-rxe.md."""
JUDGEMENTS = [
    (r"^SEND_\w+: xroce \[pkt ACK aeth=NAK_INV; cqe recv LOC_LEN_ERR\] rxe \[pkt ACK aeth=NAK_OP; cqe recv LOC_QP_OP_ERR\]",
     "(b) rxe departs: ⚠ A40, a SEND longer than the receive buffer: rxe NAK63 + LOC_QP_OP_ERR, IBTA/verbs "
     "NAK61 + LOC_LEN_ERR (a40_send_longer_than_buffer.pkt)"),
    (r"^SEND_(ONLY|LAST)_INV: xroce \[pkt ACK aeth=NAK_INV\] rxe \[pkt ACK aeth=ACK\]",
     "(b) rxe departs: ⚠ A36, SEND_WITH_INV whose invalidation fails (an ibv_reg_mr MR or a bad key): rxe ACKs, "
     "then REM_INV_REQ_ERR and ERR; the IBTA NAK is what xroce sends (a36_send_inv_refused.pkt)"),
    (r"^post_recv: xroce \[cqe recv WR_FLUSH_ERR\] rxe \[\]",
     "(b) rxe departs: A46, a receive WQE posted in ERR is flushed late by rxe 6.1 (a46_err_state.pkt); "
     "normalized away unless --strict"),
    (r"^(CAS|FA): xroce \[pkt ACK aeth=NAK_INV\] rxe \[pkt ACK aeth=NAK_ACC\]",
     "(c) both legal: an atomic both misaligned (A37, NAK61) and out of the region's range (A14, NAK62); xroce "
     "checks alignment first, rxe 6.1 the R_Key range first (check_rkey runs before the atomic's alignment "
     "check). The IBTA does not order these two checks; each answer is a correct NAK with the QP to ERR"),
    (r"^(SEND_\w+|WRITE_\w+): xroce \[pkt ACK aeth=NAK_INV.*\] rxe \[pkt ACK aeth=ACK.*\]",
     "(b) rxe departs, if the packet's payload is off the path MTU (A8) or the RETH length (A9): rxe 6.1 "
     "predates the length checks (docs/conformance-rxe.md: a08_*, a09_write_middle_after_short)"),
    (r"^SEND_\w+: xroce \[pkt ACK aeth=NAK_INV; cqe recv REM_INV_REQ_ERR.*\] rxe \[pkt ACK aeth=NAK_OP; cqe recv LOC_QP_OP_ERR\]",
     "(b) rxe departs: a SEND over the path MTU (A8, NAK61 + REM_INV_REQ_ERR as xroce) into a short buffer; "
     "rxe 6.1 lacks the path-MTU check and fails on the buffer instead (A40's NAK63)"),
    (r"^(SEND|WRITE)_\w+: xroce \[pkt ACK aeth=ACK\] rxe \[pkt ACK aeth=ACK\]$",
     "(c) both legal: the PSN of the ACK to a duplicate SEND/WRITE (A26). xroce names the newest SEND/WRITE "
     "executed (resp.c: not a READ's or an atomic's PSN, which a requester missing that response takes as an "
     "implied NAK), rxe ePSN-1 even when that is an atomic (or 0xFFFFFF before any SEND/WRITE, A26's note). "
     "Either is a cumulative ACK of executed requests; the requester ignores a stale one (B11)"),
    (r"^(CAS|FA): xroce \[\] rxe \[pkt AACK aeth=ACK\]",
     "(b) rxe departs: an atomic arriving as a duplicate at the PSN of a saved READ resource is answered by "
     "rxe 6.1 with an ATOMIC_ACK whose original value is the READ resource's VA (a kernel-held address of the "
     "responder's memory, not data); A28/A29: no matching saved atomic -> dropped silently, as xroce does "
     "(a29_dup_atomic_at_read_psn.pkt)"),
    (r"^(SEND|WRITE)_(FIRST|MIDDLE)\w*: xroce \[pkt ACK aeth=NAK_INV; cqe recv REM_INV_REQ_ERR.*\] rxe \[\]$",
     "(b) rxe departs: a FIRST/MIDDLE packet off the path MTU (A8: exactly M bytes) without AckReq: xroce "
     "NAK61 and ERR, rxe 6.1 takes it silently (a08_send_first_short.pkt)"),
]
