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

    # ---- requester side (gen_req.py; diff_rxe.py --side req) ----
    (r"^(ACK|AACK|RESP_\w+) beyond sent: xroce \[\] rxe \[.+\]$",
     "(b) rxe departs: ⚠ B11, a response whose PSN lies beyond every PSN N sent answers nothing and is "
     "ignored (b11_ghost_ack_beyond_sent.pkt, b11_ghost_read_response.pkt); rxe 6.1's check_psn does not "
     "compare with the highest PSN sent, so it completes the fully sent SEND/WRITEs before it, or takes it "
     "as an implied NAK for an outstanding READ/atomic and resends"),
    (r"^(RESP_ONLY|RESP_FIRST|RESP_LAST|AACK): xroce \[cqe send BAD_RESP_ERR\] rxe \[cqe send FATAL_ERR\]$",
     "(c) both legal: a response whose type does not match the WQE (B12): the WQE fails and the QP goes to "
     "ERR on both; rxe reports FATAL_ERR, xroce BAD_RESP_ERR, which ibv_poll_cq(3) defines for an "
     "unexpected transport opcode from the responder (b12_response_type_mismatch.pkt accepts either)"),
    (r"^AACK: xroce \[cqe send BAD_RESP_ERR\] rxe \[cqe send SUCCESS RDMA_READ len\]",
     "(b) rxe departs: B12, an atomic ACK at the PSN of an outstanding READ is a response of the wrong type: "
     "the READ must fail (rxe's own check_ack gives FATAL_ERR for other mismatches). rxe 6.1 completes the "
     "READ with SUCCESS and its full byte_len although no data arrived (lbuf unchanged), then moves to ERR; "
     "b12_atomic_ack_read_mismatch.pkt (passes on xroce) fails on it"),
    (r"^RESP_(ONLY|LAST): xroce \[cqe send BAD_RESP_ERR(; cqe send WR_FLUSH_ERR)*; state ERR\] rxe \[\]$",
     "(b) rxe departs: ⚠ B13, a READ response ONLY/LAST that ends the message short of the requested "
     "length: rxe 6.1 copies it and waits for data the response says will not come (the WQE stays "
     "outstanding until the timer); xroce fails the READ (BAD_RESP_ERR) and moves to ERR "
     "(b13_read_resp_short_first.pkt's rule)"),
    (r"^RESP_(ONLY|LAST): xroce \[cqe send BAD_RESP_ERR\] rxe \[cqe send LOC_PROT_ERR\]$",
     "(c) both legal: B13, a READ response carrying more data than the READ asked for: both fail the READ and "
     "move to ERR, writing nothing past the buffer; rxe LOC_PROT_ERR (its copy fails), xroce BAD_RESP_ERR "
     "(b13_read_resp_too_long.pkt accepts LOC_PROT_ERR, LOC_LEN_ERR or BAD_RESP_ERR)"),
    (r"^RESP_(MIDDLE|FIRST): xroce \[cqe send BAD_RESP_ERR(; cqe send WR_FLUSH_ERR)*(; state ERR)?\] rxe \[\]$",
     "(b) rxe departs: ⚠ B13, a READ response FIRST/MIDDLE that is not exactly one path MTU (shorter, or "
     "longer: then also over the path MTU, A8's rule on the requester's side): rxe 6.1 checks "
     "only the total (an overrun later fails LOC_PROT_ERR), xroce fails the READ at the malformed packet "
     "(BAD_RESP_ERR), as b13_read_resp_short_first.pkt requires"),
    (r"^ACK inside a READ: xroce \[(pkt READ reth|cqe send RETRY_EXC_ERR(; cqe send WR_FLUSH_ERR)*; state ERR)\] rxe \[\]$",
     "(c) both legal: a NAK60 naming a PSN inside an outstanding READ's response range (no "
     "correct responder sends it: those PSNs are the responses'): xroce goes back to the READ's first "
     "missing PSN at the cost of one retry (b14_nak_seq_inside_read.pkt), so with retry_cnt 0 the READ "
     "fails RETRY_EXC_ERR; rxe 6.1 drops the NAK (check_psn: COMPST_DONE for a PSN past comp.psn while a "
     "READ/atomic heads the queue)"),
    (r"^ACK inside a READ: xroce \[cqe send REM_\w+_ERR(; cqe send WR_FLUSH_ERR)*; state ERR\] rxe \[.*\]$",
     "(c) both legal: a fatal NAK (61/62/63) naming one of an outstanding READ's response PSNs, not a "
     "request PSN (no correct responder sends it; a responder NAKs a READ at the READ's own PSN): xroce "
     "applies B17 (the WQE whose PSN range holds the NAK's PSN fails with its status, the QP goes to ERR); "
     "rxe 6.1 drops it (check_psn: COMPST_DONE for a PSN past comp.psn while a READ heads the queue) and "
     "carries on. Newer rxe honours an error NAK once the READ's responses have begun (B18 [ver], "
     "b18_nak_during_read.pkt)"),
    (r"^ACK inside a READ: xroce \[cqe send REM_\w+_ERR\] rxe \[cqe send SUCCESS RDMA_READ len\]$",
     "(b) rxe departs: B17/B18, an error NAK once part of a READ's responses came (after RESP_FIRST, at "
     "the READ's next PSN or at the PSN of the READ re-issued there, B21): rxe 6.1 completes the READ with "
     "SUCCESS and its full byte_len although the data is missing, then moves to ERR; the READ must fail "
     "with the NAK's status, as xroce does (B18; b18_nak_during_read.pkt's NAK at the READ's own PSN rxe "
     "6.1 ignores instead). Same apparent root as the atomic ACK "
     "for a READ: a check_ack error path that leaves the WQE's status at SUCCESS"),
    (r"^ACK NAK60 again at a later PSN: xroce \[pkt .+\] rxe \[\]$",
     "(c) both legal: a NAK60 at a later PSN while the retry of an earlier NAK60 is under way (the "
     "responder took the resent packets up to p-1 and asks for p again): xroce goes back to p at once, "
     "rxe ignores every NAK60 until a timeout (B14 as rxe does it: started_retry). "
     "b14_nak_seq_repeat_ignored.pkt covers the same PSN, where both ignore it; the timer recovers either way"),
    (r"^end: xroce \[\] rxe \[cqe send RETRY_EXC_ERR(; cqe send WR_FLUSH_ERR)*; state ERR\]$",
     "(c) timing, not behaviour: rxe's retransmit timer stays pending across an idle moment (it is armed "
     "only when none is pending, B19), so in a timer script its next expiry comes earlier than xroce's, "
     "here during the script's end (real time on rxe) with retry_cnt used up; both resent the same PSNs "
     "in the same step before"),
]
