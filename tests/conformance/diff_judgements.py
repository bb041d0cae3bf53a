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
]
