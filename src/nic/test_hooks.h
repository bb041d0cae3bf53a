/* SPDX-License-Identifier: MIT */
/*
 * Test hooks, NULL (one predictable branch each) outside tests.
 * xr_qp_commit_hook: qp_commit calls it right after it lets go of the
 * QP's lock, before the command returns, so a test can run a pass at
 * exactly the moment a commit's first packet could leave from headers of
 * before the commit (test_tx_hdr).
 * xr_rq_doorbell_hook: the receive doorbell calls it between storing the
 * index and reading the QP's state, so a test can fail the QP and flush
 * it right there (test_recv_doorbell_race).
 */
#ifndef XR_NIC_TEST_HOOKS_H
#define XR_NIC_TEST_HOOKS_H

/* Linked into the tests from the static library; never exported by the
 * shared one (a program could set them and run code inside a pass). */
#define XR_TEST_HOOK __attribute__((visibility("hidden")))

extern XR_TEST_HOOK void (*volatile xr_qp_commit_hook)(void *arg);
extern XR_TEST_HOOK void *volatile xr_qp_commit_hook_arg;
extern XR_TEST_HOOK void (*volatile xr_rq_doorbell_hook)(void *arg);
extern XR_TEST_HOOK void *volatile xr_rq_doorbell_hook_arg;

#endif
