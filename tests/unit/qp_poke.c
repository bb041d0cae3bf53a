/* SPDX-License-Identifier: MIT */
/* Engine internals for test_doorbell_checks, whose verbs' struct xr_qp
 * hides the engine's: a receive doorbell's index stored as the doorbell
 * stores it after its check, without the check (a race made to order),
 * and the busy list's length. */
#include "nic/engine.h"

int test_store_rq_pi(struct xr_engine *e, uint32_t qpn, uint16_t pi);

int test_store_rq_pi(struct xr_engine *e, uint32_t qpn, uint16_t pi)
{
	struct xr_qp *qp = xr_qp_lookup(e, qpn);

	if (!qp)
		return -1;
	__atomic_store_n(&qp->rq_pi, pi, __ATOMIC_RELEASE);
	return 0;
}

unsigned test_busy_qps(struct xr_engine *e);

/* QPs on the engine's busy list: the pass serves them again. */
unsigned test_busy_qps(struct xr_engine *e)
{
	return __atomic_load_n(&e->nbusy, __ATOMIC_ACQUIRE);
}
