/* tests/ibgda/e2e/order_gpu.c: the backend built with GPU-scope doorbell
 * ordering (GOSHMEM_IBGDA_ORDER_GPU, as a kernel that asks for it), to check
 * that it refuses queues the host marks as being in host memory (see
 * backend.h, bk_order_run_gpu). */
#define _DEFAULT_SOURCE
#define GOSHMEM_IBGDA_ORDER_GPU 1
#include "backend.h"

uint64_t bk_order_run_gpu(bk_env_t *env, uint32_t flags, uint64_t *report)
{
    bk_pe_t *p = &env->pe[0];
    uint64_t v = 7;
    p->ib.flags = flags;
    p->ib.report = report;
    goshmemx_host_set_state(&p->dev);
    goshmemx_host_trap_hook = bk_trap_hook;
    bk_trap_code = 0;
    if (setjmp(bk_trap_jmp) == 0)
        goshmemi_ibgda_put(0, 1, BK_P, &v, 8, 1);
    goshmemx_host_trap_hook = NULL;
    return bk_trap_code;
}

int bk_order_gpu(void) { return GOSHMEMI_IBGDA_ORDER; }
