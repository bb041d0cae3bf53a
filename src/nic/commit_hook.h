/* SPDX-License-Identifier: MIT */
/*
 * A test hook in the QP commit: when set, qp_commit calls it right after
 * it lets go of the QP's lock, before the command returns, so a test can
 * run a pass at exactly the moment a commit's first packet could leave
 * from headers of before the commit (test_tx_hdr). NULL (one predictable
 * branch per commit) outside tests.
 */
#ifndef XR_NIC_COMMIT_HOOK_H
#define XR_NIC_COMMIT_HOOK_H

extern void (*volatile xr_qp_commit_hook)(void *arg);
extern void *volatile xr_qp_commit_hook_arg;

#endif
