/* SPDX-License-Identifier: MIT */
/* A receive doorbell's index stored as the doorbell stores it after its
 * check, without the check: a race made to order (test_doorbell_checks;
 * its users see the verbs' struct xr_qp, not the engine's). */
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
