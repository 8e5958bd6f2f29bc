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

#endif
