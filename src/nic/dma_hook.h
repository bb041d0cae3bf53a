/* SPDX-License-Identifier: MIT */
/*
 * A test hook in the DMA path: when set, xr_dma_write calls it after the
 * packet's key check and before the first byte is copied, so a test can
 * deregister or re-register the region from another thread at exactly the
 * moment defect 1 of issue 15 lived in. NULL (one predictable branch per
 * copy) outside tests.
 */
#ifndef XR_NIC_DMA_HOOK_H
#define XR_NIC_DMA_HOOK_H

#include "test_hooks.h"   /* XR_TEST_HOOK */

extern XR_TEST_HOOK void (*volatile xr_dma_write_hook)(void *arg);
extern XR_TEST_HOOK void *volatile xr_dma_write_hook_arg;

#endif
