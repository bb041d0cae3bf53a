/* SPDX-License-Identifier: MIT */
/*
 * The link's wakeups for the engine's thread, taken under the pass lock
 * that callers' passes hold (taking the link's wait fd may reset receive
 * state a pass reads): the thread's own arming before it sleeps, the
 * standby fd it polls while a caller drives, and a caller's pause, which
 * arms the link for it (progress.c).
 */
#include "engine.h"

int xr_dp_link_wait_fd(struct xr_engine *e)
{
	int fd;

	pthread_mutex_lock(&e->dp_mutex);
	fd = e->link->ops->wait_fd(e->link);
	e->progress.link_arms++;
	pthread_mutex_unlock(&e->dp_mutex);
	return fd;
}

int xr_dp_link_standby_fd(struct xr_engine *e, bool *waiting)
{
	const struct xr_link_ops *ops = e->link->ops;
	int fd;

	*waiting = false;
	if (!ops->standby_fd || !ops->arm)
		return -1;
	/* Waited for, not tried: the thread, woken onto the core of a caller
	 * preempted in its pass, would try in vain until its time slice
	 * ended (it stood by deaf, and every pause fell back to a wakeup). */
	pthread_mutex_lock(&e->dp_mutex);
	fd = ops->standby_fd(e->link);
	/* A caller paused: the frames are ours (under the lock: a caller back
	 * meanwhile withdraws this arming, xr_progress_lease), and so are
	 * frames waiting to leave, which only a pass sends. */
	if (fd >= 0 && atomic_load(&e->progress.paused)) {
		int r = ops->arm(e->link, true);
		if (r >= 0)
			e->progress.paused_arm = ++e->progress.link_arms;
		*waiting = r > 0 || e->txq->n || xr_link_tx_held(e->link);
	}
	pthread_mutex_unlock(&e->dp_mutex);
	return fd;
}

/* Callers try the lock: one that waited for a pass of the thread's
 * would sleep on the mutex, the wakeup a pause is there to save. */
int xr_dp_link_arm(struct xr_engine *e, bool arm)
{
	const struct xr_link_ops *ops = e->link ? e->link->ops : NULL;
	int r = -1;

	if (!ops || !ops->arm || pthread_mutex_trylock(&e->dp_mutex))
		return -1;   /* withdrawing: the thread withdraws when it next stands by */
	if (arm) {
		/* Frames the link refused leave only through a pass. */
		if (!e->txq->n && !xr_link_tx_held(e->link))
			r = ops->arm(e->link, true);
		if (r >= 0)
			e->progress.paused_arm = ++e->progress.link_arms;
	} else if (e->progress.paused_arm == e->progress.link_arms && !atomic_load(&e->progress.sleeping)) {
		/* Nobody armed it since, and the thread does not sleep on an
		 * older arming of its own (the same counter on the link): the
		 * arming is the pause's alone. A thread about to sleep sets
		 * `sleeping` before it takes the lock to arm. */
		r = ops->arm(e->link, false);
	}
	pthread_mutex_unlock(&e->dp_mutex);
	return r;
}

bool xr_dp_tx_waiting(struct xr_engine *e)
{
	bool waiting;

	pthread_mutex_lock(&e->dp_mutex);
	/* Also frames the link took but sends only when called again. */
	waiting = e->txq->n != 0 || xr_link_tx_held(e->link);
	pthread_mutex_unlock(&e->dp_mutex);
	return waiting;
}
