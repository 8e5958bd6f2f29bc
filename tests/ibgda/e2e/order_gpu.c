/* tests/ibgda/e2e/order_gpu.c: the backend built with GPU-scope doorbell
 * ordering (GOSHMEM_IBGDA_ORDER_GPU, as a kernel that asks for it), to check
 * that it refuses queues the host marks as being in host memory (see
 * backend.h, bk_order_run_gpu). */
#define _DEFAULT_SOURCE
#define GOSHMEM_IBGDA_ORDER_GPU 1
#include "backend.h"

uint64_t bk_order_run_gpu(bk_env_t *env, uint32_t flags, uint64_t *report) { return bk_order_put_once(env, flags, report); }

int bk_order_gpu(void) { return GOSHMEMI_IBGDA_ORDER; }
