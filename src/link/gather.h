/* SPDX-License-Identifier: MIT */
/* Gather frames inside the link layer (the public part is in xroce/link.h). */
#ifndef XR_LINK_GATHER_H
#define XR_LINK_GATHER_H

#include "xroce/link.h"

/* The receiver freed f: done with the sender's memory, claimed or not. */
void xr_frame_gather_done(struct xr_frame *f);
/* A settle on a thread that holds a claim gives the claim up first. */
void xr_frame_release_claim(void);

#endif
