/* tests/ibgda/e2e: two PEs as threads of one process, each with its own
 * device state and IBGDA state (include/goshmem/ibgda/backend.h), QPs per
 * (ctx, peer) that the Go SoftNIC (an emulation) executes. Driven from
 * backend_test.go via hostthreads_cgo.go. */
#ifndef GOSHMEM_TESTS_IBGDA_E2E_BACKEND_H
#define GOSHMEM_TESTS_IBGDA_E2E_BACKEND_H

#include <stdint.h>

#include <goshmem/ibgda/backend.h>

#define BK_PES 2
#define BK_CTX 2
#define BK_HEAP (64 * 1024)
#define BK_SLOTS 8
#define BK_INLINE 64
#define BK_HEAP_KEY(pe) (0x1000u + (uint32_t)(pe))
#define BK_SLOT_KEY(pe) (0x2000u + (uint32_t)(pe))

/* Offsets in each PE's heap (written by the peer). */
enum {
    BK_A = 0x1000,   /* 16 B inline put from the stack */
    BK_B = 0x1100,   /* 1000 B put from the heap (data pointer) */
    BK_C = 0x1600,   /* 600 B put from the stack (inline chunks) */
    BK_P = 0x1900,   /* 8 B "p" */
    BK_W8 = 0x2000,  /* 8-byte AMO word */
    BK_W4 = 0x2008,  /* two 4-byte AMO words */
    BK_SIG = 0x2100, /* signal word: SET 5, then ADD 3 */
    BK_SD1 = 0x2200, /* put_signal payload 1 (32 B, inline) */
    BK_SD2 = 0x2400, /* put_signal payload 2 (2000 B, data pointer) */
    BK_FX = 0x3000,  /* 1024 B payload before a fence */
    BK_FFLAG = 0x3800,
    BK_Q0 = 0x4000, /* 4096 B, ctx 0, nbi */
    BK_Q1 = 0x5000, /* 4096 B, ctx 1, nbi */
    /* this PE's own sources and get destinations */
    BK_SRC_B = 0x8000,
    BK_SRC_SD2 = 0x8800,
    BK_SRC_FX = 0x9000,
    BK_SRC_Q0 = 0xA000,
    BK_SRC_Q1 = 0xB000,
    BK_GET = 0xC000,
};

typedef struct bk_pe {
    goshmemi_device_state_t dev;
    goshmemi_ibgda_state_t ib;
    uint8_t *heap;
    uint8_t *slots; /* BK_SLOTS slots, then one 8 B scratch word per QP */
    goshmemi_ibgda_qp_t *qps; /* BK_CTX QPs: ctx c reaches the peer on qps[c] */
    uint32_t *dbrec[BK_CTX];
    uint64_t *db[BK_CTX];
    uint32_t *cq_dbrec[BK_CTX];
    uint32_t slot_busy[BK_SLOTS];
    uint32_t fence_pending[BK_CTX];
    uint32_t qp_index[BK_CTX * BK_PES];
    uint32_t rkey[BK_PES];
    uint64_t remote_base[BK_PES];
    uint32_t lkey;
    uint64_t err_word;
} bk_pe_t;

typedef struct bk_env {
    bk_pe_t pe[BK_PES];
    uint32_t sq_wqebb, cqe_cnt;
    int failed;
    char msg[512];
} bk_env_t;

bk_env_t *bk_env_new(uint32_t sq_wqebb, uint32_t cqe_cnt);
void bk_env_free(bk_env_t *env);
/* Runs both PEs' scripts on two threads; 0, or -1 with env->msg. */
int bk_run(bk_env_t *env);
/* The same through the device API (goshmem_* from <goshmem.h>: remote.h
 * routes PEs with heap_base 0 to the backend); devapi.c. */
int dv_run(bk_env_t *env);

/* Failure paths, on the calling thread as PE 0 (traps caught with the host
 * trap hook; the env is unusable afterwards):
 * bk_timeout_run: QP timeouts of timeout_ns, the state's report word at
 * *report; a blocking 8-byte put and a PE-wide quiet with no NIC running
 * (the NIC never sees the doorbell record). Returns the trap code (0: none).
 * bk_order_run{,_gpu}: the state's flags = flags, one inline put, in a TU
 * built with the backend's default ordering (backend.c) or with
 * GOSHMEM_IBGDA_ORDER_GPU (order_gpu.c). Returns the trap code (0: none). */
uint64_t bk_timeout_run(bk_env_t *env, uint64_t timeout_ns, uint64_t *report);
uint64_t bk_order_run(bk_env_t *env, uint32_t flags, uint64_t *report);
uint64_t bk_order_run_gpu(bk_env_t *env, uint32_t flags, uint64_t *report);
/* The GOSHMEMI_IBGDA_ORDER each TU was built with. */
int bk_order_default(void);
int bk_order_gpu(void);

/* Trap catching shared by those TUs (backend.c). */
#include <setjmp.h>
extern _Thread_local jmp_buf bk_trap_jmp;
extern _Thread_local uint64_t bk_trap_code;
void bk_trap_hook(uint64_t code, uint64_t info, const char *what);

/* The one body of bk_order_run{,_gpu} (see above): static inline, so each TU
 * that calls it compiles it, and the backend's put in it, with that TU's
 * GOSHMEM_IBGDA_ORDER_* choice. */
static inline uint64_t bk_order_put_once(bk_env_t *env, uint32_t flags, uint64_t *report)
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

#endif
