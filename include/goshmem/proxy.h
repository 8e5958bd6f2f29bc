/* goshmem device API: the CPU-proxy remote path (GPU-initiated, CPU-submitted).
 *
 * A GPU thread that targets a PE it cannot reach by load/store
 * (heap_base[pe] == 0, remote_transport == GOSHMEMI_REMOTE_PROXY) writes a
 * 16-byte descriptor into a ring in host-pinned memory; a CPU worker
 * (internal/transport/proxy) polls the ring, submits the operation through
 * a host transport (cuda copies and atomic kernels on one node, ofi/shm for
 * host memory), and reports completion through a counter per ring in GPU
 * memory, written in stream order after the operation's data
 * (cuStreamWriteValue64), so a thread that sees the counter sees the data.
 * The tuned protocol makes an inline request one posted 16-byte store; the
 * untuned baseline (atomic reservation, a PCIe read of the consumer index,
 * two-store publication) is kept to measure what the tuning buys.
 *
 * Rings and contexts. goshmemi_proxy_state_t (GPU memory, built by the
 * host) holds up to GOSHMEMI_PROXY_MAX_RINGS rings; device context c uses
 * rings [ctx_first[c], ctx_first[c] + ctx_count[c]) and never shares them
 * with another context, so a latency-sensitive context does not queue
 * behind bulk traffic. Within a context a thread
 * uses ring ctx_first + (linear block index % ctx_count): one thread's
 * requests always go through one ring, and the worker applies a ring's
 * requests in order, so goshmem_fence needs no work on this path.
 * Placement rule (the host keeps it): the reserved rings come first, ring
 * c - 1 is context c's (c >= 1), and the default context's rings follow,
 * so a post on c >= 1 finds its ring without reading the table: the enqueue
 * reads the ring's two lines at once and nothing before them (each
 * dependent load is an L2 round trip; see "Enqueue cost").
 *
 * Producer protocols (ring->mode, chosen by the host per context):
 *   GOSHMEMI_PROXY_SPSC (tuned): one producer at a time per ring (the
 *       caller's promise, like a private context): head and the cached
 *       consumer index live in GPU memory and are plain loads/stores (one
 *       16-byte load); the consumer index is read again only when the ring
 *       looks full, from the ring's completion counter in GPU memory
 *       (ring->done, which the worker's stream writes after the chain it
 *       covers: a full ring is polled in L2, never over PCIe); validity is a
 *       phase (lap parity) bit in the descriptor, so enqueue is ONE posted
 *       16-byte store (st.relaxed.sys.v2.u64), no flag write, no fence for
 *       inline requests. Default for contexts >= 1. goshmemx_proxy_producer_*
 *       (below) keeps head and the cached index in registers: one posted
 *       16-byte store and no load at all.
 *   GOSHMEMI_PROXY_MPSC: any number of producers (the default context,
 *       which every thread of every kernel may use): a device atomic
 *       (atom.add.gpu) reserves the slot, the cached consumer index is
 *       shared (raised with red.max; read before the atomic so both are in
 *       flight together), publication is the same single store; a full ring
 *       is polled on ring->done in GPU memory as above.
 *   GOSHMEMI_PROXY_BASELINE (the untuned baseline): device atomic
 *       reservation, a PCIe read of the host-resident consumer index
 *       (ring->tail, written by the worker's stream for baseline rings only)
 *       on every request, and publication by two stores, the second a
 *       system-scope release. Kept to measure what tuning buys.
 *
 * Enqueue cost: a single posting thread pays every dependent global load
 * before its store as a full cache miss, so the post is kept one round trip
 * deep. SPSC issues ring c - 1's line 0 and line 1 together (no table
 * lookup: the placement rule above) and stores; MPSC reads the table's
 * first line, then issues the ring's line 0, cached_tail and atom.add
 * together. A p's value travels in a register (goshmemi_remote_put_value),
 * not through the stack. Check the SASS depth and re-run bench/proxy/run.sh
 * (docs/proxy.md) before adding a load to this path.
 *
 * Descriptor (two little-endian u64 words, 16-byte aligned):
 *   w0: bit 0 phase | bits 1-5 op | bits 6-15 pe | bits 16-23 arg | bits 24-63 roff
 *   w1: op-specific (below).
 * roff is the symmetric byte offset on the target PE (40 bits: heaps up to
 * 1 TiB). Ops:
 *   PUT        w1 = loff | size << 40: copy size bytes (< 16 MiB) from this
 *              PE's heap at loff (arg = 0), or from offset loff of the
 *              registered buffer in slot arg - 1 of the table `regs` (arg
 *              1..GOSHMEMI_PROXY_MAX_REGS). The payload is referenced, not
 *              copied: the source must be in the symmetric heap or a
 *              registered buffer (any other source goes as INLINE chunks of
 *              8 bytes instead), and a blocking put waits for the request's
 *              completion before the source is reused.
 *   PUT_INLINE w1 = up to 8 payload bytes, arg = length (1..8).
 *   GET        w1 = loff | size << 40: copy from pe's roff into this PE's heap
 *              at loff (arg = 0) or into registered buffer arg - 1 at loff
 *              (any other destination goes through replies).
 *   GET_REPLY  arg = length (1..8): the bytes come back in the reply slot.
 *   AMO        arg = amo op (bits 0-2, GOSHMEMI_AMO_*) | 8-byte (bit 3) |
 *              reply (bit 4) | ext (bit 5); w1 = operand. With ext (compare-
 *              swap) the next slot holds {its own lap's phase bit, cmp}: it is
 *              written first, and the worker reads it with the main slot.
 * Validity: slot t (ticket t, slot t mod nslots) is valid when its phase bit
 * equals ((t / nslots) & 1) ^ 1; rings start zeroed, so lap 0 expects 1.
 * The worker reads w0 (acquire), then w1. Single-store publication relies
 * on a 16-byte aligned posted write reaching host memory as one PCIe TLP
 * that the CPU observes whole; BASELINE does not rely on it (w1 first,
 * then w0 with release).
 *
 * Completion and replies. ring->done (GPU memory): every ticket below
 * (done & ~GOSHMEMI_PROXY_DONE_ERR) has completed and its slot is free
 * again (an inline payload is read from the slot by the operation, which
 * precedes the counter in stream order); bit 63 is set for good
 * once the worker rejected a request of this ring (invalid PE, offset, op):
 * the next quiet of that context (or a blocking call on the ring) then
 * traps with GOSHMEMI_ERR_PROXY_REJECTED and the host reports the details
 * (shmem.Synchronize / Quiet). Fetching requests (g, get into a
 * non-symmetric destination, fetching AMOs) get their result in the reply
 * slot of their ticket (GPU memory: only the worker's stream and this GPU
 * touch it): the worker writes value, then
 * ticket = t + 1 (bit 63 when rejected); the thread then stores ack =
 * ticket. A producer of a later lap waits until ack == ticket before it
 * reuses the slot, so no reply is overwritten before it is read. That wait
 * cannot block the ring: the reply it waits for belongs to ticket t - nslots,
 * which the worker has already served (the space wait came first), and its
 * owner only waits for that reply before it acknowledges.
 *
 * Registered buffers. GPU memory of this PE that another library allocated
 * (shmem.RegisterDevice) is entered by the host in the table `regs` (GPU
 * memory): {base, end} per slot, end = 0 for a free slot. The host writes
 * base before end when it adds one and clears end first when it removes
 * one; a thread reads end, base and end again (acquire loads, read again
 * while end changes), so a slot changing during its scan matches nothing
 * or one whole entry, and a buffer registered throughout is always found;
 * a buffer is used only between its registration and its
 * removal (the caller's rule), never during either. A put from (or a get
 * into) a range outside the heap looks the range up here (a scan of the
 * n slots in use; the heap's own path does not read the table) and, when
 * one slot holds all of it, names the slot in the descriptor: the worker
 * copies from or to the buffer in place, as it does for the heap.
 *
 * Faults. Every proxy wait (ring full, completion, reply) checks the
 * host-pinned status block (every 64 polls, at most once per 100 us of the
 * wait: GOSHMEMI_PROXY_DEAD_CHECK_NS): status->dead != 0 (a worker
 * stopped) traps with GOSHMEMI_ERR_PROXY_DEAD; with timeout_ns set
 * (GOSHMEM_TIMEOUT) a wait longer than that traps with
 * GOSHMEMI_ERR_PROXY_TIMEOUT. A full ring is back-pressure: the producer
 * waits, a slot is never overwritten before the worker released it. A wait
 * that lasts (1024 polls) backs off with __nanosleep between polls, so
 * thousands of waiting threads do not flood the memory system the worker's
 * stream needs to make progress.
 *
 * Host mode (gcc/g++): the same protocol with __atomic builtins, so
 * tests/proxy and internal/transport/proxy's tests run it with OS threads
 * as GPU threads; goshmemx_host_set_block() sets a thread's "block index".
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_PROXY_H
#define GOSHMEM_PROXY_H

#include "ordering.h"

#define GOSHMEMI_PROXY_MAX_RINGS 64
#define GOSHMEMI_PROXY_MAX_CTX 32
/* Slots of the registered-buffer table: a descriptor's arg names slot + 1. */
#define GOSHMEMI_PROXY_MAX_REGS 255

#define GOSHMEMI_PROXY_SPSC 0u
#define GOSHMEMI_PROXY_MPSC 1u
#define GOSHMEMI_PROXY_BASELINE 2u

#define GOSHMEMI_PROXY_OP_NOP 0u /* never valid: zeroed memory */
#define GOSHMEMI_PROXY_OP_PUT 1u
#define GOSHMEMI_PROXY_OP_PUT_INLINE 2u
#define GOSHMEMI_PROXY_OP_GET 3u
#define GOSHMEMI_PROXY_OP_GET_REPLY 4u
#define GOSHMEMI_PROXY_OP_AMO 5u

#define GOSHMEMI_PROXY_AMO_8B (1u << 3)
#define GOSHMEMI_PROXY_AMO_REPLY (1u << 4)
#define GOSHMEMI_PROXY_AMO_EXT (1u << 5)

#define GOSHMEMI_PROXY_OFF_BITS 40
#define GOSHMEMI_PROXY_OFF_MASK ((1ull << GOSHMEMI_PROXY_OFF_BITS) - 1)
/* Largest payload of one PUT/GET descriptor; bigger ones are split. */
#define GOSHMEMI_PROXY_CHUNK (8ull << 20)
#define GOSHMEMI_PROXY_DONE_ERR (1ull << 63)

/* Error codes (goshmemi_device_state_t.error_code) of the remote paths. */
#define GOSHMEMI_ERR_REMOTE_UNAVAILABLE 16 /* remote_transport names a backend this build lacks (info: pe, offset) */
#define GOSHMEMI_ERR_PROXY_DEAD 17         /* a proxy worker stopped (info: ring, status code) */
#define GOSHMEMI_ERR_PROXY_TIMEOUT 18      /* a proxy wait exceeded GOSHMEM_TIMEOUT (info: ring, what) */
#define GOSHMEMI_ERR_PROXY_REJECTED 19     /* the worker rejected a request (info: ring, ticket low bits) */

/* info detail of GOSHMEMI_ERR_PROXY_TIMEOUT: what the thread waited for */
#define GOSHMEMI_PROXY_WAIT_SPACE 1
#define GOSHMEMI_PROXY_WAIT_DONE 2
#define GOSHMEMI_PROXY_WAIT_REPLY 3

/* One reply slot (GPU memory; see top of file). */
typedef struct goshmemi_proxy_reply {
    uint64_t value;
    uint64_t ticket;
    uint64_t ack;
    uint64_t pad_;
} goshmemi_proxy_reply_t;

/* One ring (GPU memory; three 64-byte lines). */
typedef struct goshmemi_proxy_ring {
    /* line 0: written by the host before any launch, read-only here */
    uint64_t slots;   /* device address of nslots x 16-byte descriptors (host-pinned) */
    uint64_t replies; /* device address of nslots x goshmemi_proxy_reply_t (GPU memory) */
    uint64_t tail;    /* device address of the consumer index (host-pinned u64; written for baseline rings only) */
    uint32_t log2_slots;
    uint32_t mode; /* GOSHMEMI_PROXY_SPSC / MPSC / BASELINE */
    uint32_t ctx;    /* the device context this ring serves (checked by every post) */
    uint32_t worker;
    uint64_t line0_pad_[3];
    /* line 1: producer state */
    uint64_t head;        /* next ticket; tickets count slots */
    uint64_t cached_tail; /* the last consumer index this GPU read */
    uint64_t line1_pad_[6];
    /* line 2: completion, written by the worker's stream */
    uint64_t done;
    uint64_t line2_pad_[7];
} goshmemi_proxy_ring_t;

/* Host-pinned status block, written by the host. */
typedef struct goshmemi_proxy_status {
    uint64_t dead;      /* nonzero once a worker stopped: its error class */
    uint64_t dead_info; /* which worker */
    uint64_t pad_[6];
    uint64_t ring_err[GOSHMEMI_PROXY_MAX_RINGS][2]; /* first rejection per ring: {reason, ticket} */
} goshmemi_proxy_status_t;

/* One registered buffer (GPU memory, host-written; see "Registered
 * buffers" above): device addresses [base, end); end = 0: a free slot. */
typedef struct goshmemi_proxy_reg {
    uint64_t base;
    uint64_t end;
} goshmemi_proxy_reg_t;

/* The table of registered buffers (GPU memory, host-written). */
typedef struct goshmemi_proxy_regs {
    uint32_t n; /* slots [0, n) may be in use: the device scans those */
    uint32_t pad32_;
    uint64_t pad_;
    goshmemi_proxy_reg_t reg[GOSHMEMI_PROXY_MAX_REGS];
} goshmemi_proxy_regs_t;

typedef struct goshmemi_proxy_state {
    uint32_t version; /* GOSHMEMI_PROXY_STATE_VERSION */
    uint32_t size;
    uint32_t nrings;
    uint32_t nctx;
    uint64_t status;     /* device address of goshmemi_proxy_status_t (host-pinned) */
    uint64_t timeout_ns; /* 0: proxy waits never time out */
    /* device address of the goshmemi_proxy_regs_t (0: none). Taken from
     * pad_ (size unchanged): a state without it reads 0, and its kernels
     * send registered buffers inline as before. */
    uint64_t regs;
    uint64_t pad_[3];
    uint8_t ctx_first[GOSHMEMI_PROXY_MAX_CTX];
    uint8_t ctx_count[GOSHMEMI_PROXY_MAX_CTX];
    goshmemi_proxy_ring_t rings[GOSHMEMI_PROXY_MAX_RINGS];
} goshmemi_proxy_state_t;

#define GOSHMEMI_PROXY_STATE_VERSION ((1u << 16) + (uint32_t)sizeof(goshmemi_proxy_state_t))

#if defined(__cplusplus)
static_assert(sizeof(goshmemi_proxy_ring_t) == 192, "goshmemi_proxy_ring_t layout changed: update proxy/layout.go");
static_assert(sizeof(goshmemi_proxy_reply_t) == 32, "goshmemi_proxy_reply_t layout changed: update proxy/layout.go");
static_assert(sizeof(goshmemi_proxy_state_t) == 128 + 192 * GOSHMEMI_PROXY_MAX_RINGS,
              "goshmemi_proxy_state_t layout changed: update proxy/layout.go");
#else
_Static_assert(sizeof(goshmemi_proxy_ring_t) == 192, "goshmemi_proxy_ring_t layout changed: update proxy/layout.go");
_Static_assert(sizeof(goshmemi_proxy_reply_t) == 32, "goshmemi_proxy_reply_t layout changed: update proxy/layout.go");
_Static_assert(sizeof(goshmemi_proxy_state_t) == 128 + 192 * GOSHMEMI_PROXY_MAX_RINGS,
               "goshmemi_proxy_state_t layout changed: update proxy/layout.go");
#endif
#if defined(__cplusplus)
static_assert(sizeof(goshmemi_proxy_regs_t) == 16 + 16 * GOSHMEMI_PROXY_MAX_REGS,
              "goshmemi_proxy_regs_t layout changed: update proxy/layout.go");
#else
_Static_assert(sizeof(goshmemi_proxy_regs_t) == 16 + 16 * GOSHMEMI_PROXY_MAX_REGS,
               "goshmemi_proxy_regs_t layout changed: update proxy/layout.go");
#endif

/* Descriptor encoding (shared with the worker; internal/transport/proxy mirrors it). */
GOSHMEMI_FN uint64_t goshmemi_proxy_w0(uint32_t op, int pe, uint32_t arg, uint64_t roff)
{
    return ((uint64_t)op << 1) | ((uint64_t)((uint32_t)pe & 0x3ffu) << 6) | ((uint64_t)(arg & 0xffu) << 16) |
           ((roff & GOSHMEMI_PROXY_OFF_MASK) << 24);
}
GOSHMEMI_FN uint64_t goshmemi_proxy_w1_span(uint64_t loff, uint64_t size)
{
    return (loff & GOSHMEMI_PROXY_OFF_MASK) | (size << GOSHMEMI_PROXY_OFF_BITS);
}

/* ---- host-mode hooks ------------------------------------------------------ */
#if !GOSHMEMI_CUDA
GOSHMEMI_EXTERN_C_BEGIN
#if defined(__cplusplus)
__attribute__((weak)) thread_local int goshmemi_host_block;
#else
__attribute__((weak)) _Thread_local int goshmemi_host_block;
#endif
GOSHMEMI_EXTERN_C_END
/* Host mode only: the calling thread's "linear block index" (ring choice). */
GOSHMEMI_FN void goshmemx_host_set_block(int b) { goshmemi_host_block = b; }
#endif

GOSHMEMI_FN unsigned goshmemi_proxy_block_index(void)
{
#if GOSHMEMI_CUDA
    return blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
#else
    return (unsigned)goshmemi_host_block;
#endif
}

/* ---- ordering primitives of the ring, named for their purpose ------------- */

/* Read-only ring configuration (written by the host before the launch):
 * CUDA: the non-coherent read-only path (ld.global.nc), which the fences of
 * quiet and waits do not invalidate. */
GOSHMEMI_FN uint64_t goshmemi_proxy_cfg_u64(const uint64_t *p)
{
#if GOSHMEMI_CUDA
    return __ldg((const unsigned long long *)p);
#else
    return *p;
#endif
}
GOSHMEMI_FN uint32_t goshmemi_proxy_cfg_u32(const uint32_t *p)
{
#if GOSHMEMI_CUDA
    return __ldg(p);
#else
    return *p;
#endif
}
GOSHMEMI_FN uint32_t goshmemi_proxy_cfg_u8(const uint8_t *p)
{
#if GOSHMEMI_CUDA
    return __ldg((const unsigned char *)p);
#else
    return *p;
#endif
}

/* Publishes a descriptor with one posted 16-byte store (tuned and MPSC).
 * Rule: the slot's phase bit is its validity, so no flag store follows;
 * the store is morally strong at system scope so the CPU worker's load
 * observes it (CUDA: st.relaxed.sys.global.v2.u64, one STG.128). Host:
 * w1 relaxed, then w0 with release (a C11 consumer reads w0 acquire, w1). */
GOSHMEMI_FN void goshmemi_proxy_publish_v2(uint64_t *slot, uint64_t w0, uint64_t w1)
{
#if GOSHMEMI_CUDA
    asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" ::"l"(slot), "l"(w0), "l"(w1) : "memory");
#else
    __atomic_store_n(&slot[1], w1, __ATOMIC_RELAXED);
    __atomic_store_n(&slot[0], w0, __ATOMIC_RELEASE);
#endif
}

/* Baseline publication: w1, then w0 as a system-scope release, so the
 * worker that sees w0 sees w1 without relying on 16-byte atomicity. */
GOSHMEMI_FN void goshmemi_proxy_publish_release(uint64_t *slot, uint64_t w0, uint64_t w1)
{
    goshmemi_relaxed_store_u64(&slot[1], w1, 1);
    goshmemi_release_store_u64(&slot[0], w0, 1);
}

/* Makes this thread's earlier stores (a referenced payload in the GPU heap,
 * an extension slot) visible to the CPU worker and to the copy engine it
 * drives before the descriptor that names them (a worker that sees the
 * descriptor may read the payload at once). */
GOSHMEMI_FN void goshmemi_proxy_payload_to_worker_barrier(void) { goshmemi_order_fence(1); }

/* After a completion counter or reply ticket was seen: later loads see the
 * data the worker's stream wrote before it (acquire). */
GOSHMEMI_FN void goshmemi_proxy_completion_acquire(void) { goshmemi_order_fence(1); }

/* ---- state access ------------------------------------------------------- */

GOSHMEMI_FN goshmemi_proxy_state_t *goshmemi_proxy_state(void)
{
    return (goshmemi_proxy_state_t *)(uintptr_t)goshmemi_cstate()->proxy_state;
}

GOSHMEMI_FN int goshmemi_proxy_ring_index(goshmemi_proxy_state_t *ps, const goshmemi_proxy_ring_t *r)
{
    return (int)(r - ps->rings);
}

/* What a post needs of its ring, loaded at once: line 0 (read-only) and,
 * for a reserved ring (ctx >= 1), the producer line (head, cached_tail),
 * which the posts through this struct keep up to date (one producer). */
typedef struct goshmemi_proxy_ringcfg {
    goshmemi_proxy_ring_t *ring;
    uint64_t *slots;
    uint32_t lg;
    uint32_t mode;
    int ctx;
    uint64_t head;        /* ctx >= 1: ring->head */
    uint64_t cached_tail; /* ctx >= 1: ring->cached_tail */
} goshmemi_proxy_ringcfg_t;

GOSHMEMI_COLD void goshmemi_proxy_bad_ctx(goshmemi_proxy_state_t *ps, int ctx)
{
    uint32_t nctx = ps != NULL ? goshmemi_proxy_cfg_u32(&ps->nctx) : 0;
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_INVALID_ARG, GOSHMEMI_ERROR_INFO(ctx, nctx),
                  "device context out of range [0, proxy contexts) (GOSHMEM_PROXY_CONTEXTS)");
}

/* The ring this thread uses for ctx, with its line 0; traps on a context
 * the host did not configure. Context c >= 1 owns ring c - 1 (placement
 * rule at the top), so its post depends on no table load: ring c - 1's
 * line 0 and producer line are read together (the index clamped into the
 * array), and its ctx field must say c, which also rejects c >= nctx (that
 * ring serves the default context or is unconfigured). Context 0 reads
 * ctx_first[0]/ctx_count[0] (one line) first; its rings need no check
 * (the host configures at least one), so its reservation (atom.add) can
 * leave with the line-0 loads. */
GOSHMEMI_FN goshmemi_proxy_ringcfg_t goshmemi_proxy_ring_for(goshmemi_proxy_state_t *ps, int ctx)
{
    goshmemi_proxy_ringcfg_t c;
    if (GOSHMEMI_UNLIKELY(ps == NULL)) goshmemi_proxy_bad_ctx(ps, ctx);
    c.ctx = ctx;
    c.head = c.cached_tail = 0;
    unsigned r;
    if (ctx != 0) {
        r = (unsigned)ctx - 1u;
        if (GOSHMEMI_UNLIKELY(r >= GOSHMEMI_PROXY_MAX_RINGS)) r = 0; /* in bounds; rejected below */
        c.ring = &ps->rings[r];
        /* issued before the check below so that both loads are in flight
         * together (the compiler would not hoist a plain load above the
         * trap branch); weak: only this thread writes these words */
#if GOSHMEMI_CUDA
        unsigned long long h, t;
        asm volatile("ld.global.v2.u64 {%0, %1}, [%2];" : "=l"(h), "=l"(t) : "l"(&c.ring->head) : "memory");
        c.head = h;
        c.cached_tail = t;
#else
        c.head = c.ring->head;
        c.cached_tail = c.ring->cached_tail;
#endif
    } else {
        unsigned first = goshmemi_proxy_cfg_u8(&ps->ctx_first[0]), count = goshmemi_proxy_cfg_u8(&ps->ctx_count[0]);
        r = first;
        if (count > 1) r += goshmemi_proxy_block_index() % count;
        c.ring = &ps->rings[r];
    }
    c.slots = (uint64_t *)(uintptr_t)goshmemi_proxy_cfg_u64(&c.ring->slots);
    uint64_t lm = goshmemi_proxy_cfg_u64((const uint64_t *)(const void *)&c.ring->log2_slots); /* log2 | mode << 32 */
    c.lg = (uint32_t)lm;
    c.mode = (uint32_t)(lm >> 32);
    if (ctx != 0) {
        uint32_t owner = goshmemi_proxy_cfg_u32(&c.ring->ctx);
        if (GOSHMEMI_UNLIKELY(owner != (uint32_t)ctx || c.slots == NULL)) goshmemi_proxy_bad_ctx(ps, ctx);
    }
    return c;
}

/* ---- waits (cold: out of line) ------------------------------------------ */

typedef struct goshmemi_proxy_waiter {
    uint64_t t0;
    uint32_t polls;
    uint64_t tdead; /* when status->dead was last read (0: never) */
} goshmemi_proxy_waiter_t;

/* status->dead is read at most once per this many ns of one wait: it is
 * host-pinned, and every read is a PCIe round trip: many waiting CTAs
 * reading it every few polls would make millions of reads a second, on the
 * same host link the worker's driver submissions (pushbuffer fetches) and
 * the descriptors travel. */
#define GOSHMEMI_PROXY_DEAD_CHECK_NS 100000ull

/* One poll's bookkeeping: every 64 polls, fail on a timeout, and (at most
 * once per GOSHMEMI_PROXY_DEAD_CHECK_NS) on a dead worker (see top of file). */
GOSHMEMI_FN void goshmemi_proxy_waited(goshmemi_proxy_state_t *ps, goshmemi_proxy_waiter_t *w, int ring, int what)
{
    goshmemi_poll_pause();
#if GOSHMEMI_CUDA
    if (w->polls >= 1024u) __nanosleep(256); /* a long wait: back off (see Faults at the top) */
#endif
    if ((++w->polls & 63u) != 0) return;
    const uint64_t now = goshmemi_now_ns();
    const goshmemi_proxy_status_t *st = (const goshmemi_proxy_status_t *)(uintptr_t)goshmemi_proxy_cfg_u64(&ps->status);
    if (st != NULL && (w->tdead == 0 || now - w->tdead >= GOSHMEMI_PROXY_DEAD_CHECK_NS)) {
        w->tdead = now;
        uint64_t dead = goshmemi_relaxed_load_u64(&st->dead, 1);
        if (GOSHMEMI_UNLIKELY(dead != 0))
            goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_PROXY_DEAD, GOSHMEMI_ERROR_INFO(ring, dead),
                          "proxy worker stopped (status->dead): the request can never complete");
    }
    uint64_t limit = goshmemi_proxy_cfg_u64(&ps->timeout_ns);
    if (limit != 0) {
        if (w->t0 == 0)
            w->t0 = now;
        else if (GOSHMEMI_UNLIKELY(now - w->t0 > limit))
            goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_PROXY_TIMEOUT, GOSHMEMI_ERROR_INFO(ring, what),
                          "proxy wait exceeded GOSHMEM_TIMEOUT (worker stuck or too slow)");
    }
}

GOSHMEMI_COLD void goshmemi_proxy_rejected(goshmemi_proxy_state_t *ps, int ring, uint64_t ticket)
{
    (void)ps;
    goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_PROXY_REJECTED, GOSHMEMI_ERROR_INFO(ring, ticket),
                  "proxy worker rejected a request of this ring (invalid PE, offset or op; the host reports which)");
}

/* Waits until the consumer index reaches need (ring full: back-pressure)
 * and returns it. Tuned and MPSC rings read it from ring->done (GPU
 * memory, L2): the worker's stream writes it after the chain it covers, so
 * every slot below it is free (its inline payload was read by then). The
 * baseline reads the host-resident tail over PCIe (what tuning removes). The
 * error bit of done is not part of the index (a rejection is reported by
 * the next quiet, not here). */
GOSHMEMI_COLD uint64_t goshmemi_proxy_wait_space(goshmemi_proxy_state_t *ps, goshmemi_proxy_ring_t *ring, uint64_t need,
                                                 uint32_t mode)
{
    const uint64_t *tailp = mode == GOSHMEMI_PROXY_BASELINE
                                ? (const uint64_t *)(uintptr_t)goshmemi_proxy_cfg_u64(&ring->tail)
                                : (const uint64_t *)&ring->done;
    goshmemi_proxy_waiter_t w = {0, 0, 0};
    uint64_t tail;
    while ((tail = goshmemi_relaxed_load_u64(tailp, 1) & ~GOSHMEMI_PROXY_DONE_ERR) < need)
        goshmemi_proxy_waited(ps, &w, goshmemi_proxy_ring_index(ps, ring), GOSHMEMI_PROXY_WAIT_SPACE);
    if (mode == GOSHMEMI_PROXY_SPSC) {
        ring->cached_tail = tail;
    } else if (mode == GOSHMEMI_PROXY_MPSC) {
#if GOSHMEMI_CUDA
        asm volatile("red.relaxed.gpu.global.max.u64 [%0], %1;" ::"l"(&ring->cached_tail), "l"((unsigned long long)tail)
                     : "memory");
#else
        uint64_t cur = __atomic_load_n(&ring->cached_tail, __ATOMIC_RELAXED);
        while (cur < tail &&
               !__atomic_compare_exchange_n(&ring->cached_tail, &cur, tail, 1, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
        }
#endif
    }
    return tail;
}

/* Waits until every ticket < target of ring completed, then acquires. */
GOSHMEMI_COLD void goshmemi_proxy_wait_done(goshmemi_proxy_state_t *ps, goshmemi_proxy_ring_t *ring, uint64_t target)
{
    goshmemi_proxy_waiter_t w = {0, 0, 0};
    for (;;) {
        uint64_t d = goshmemi_relaxed_load_u64(&ring->done, 1);
        if (GOSHMEMI_UNLIKELY(d & GOSHMEMI_PROXY_DONE_ERR))
            goshmemi_proxy_rejected(ps, goshmemi_proxy_ring_index(ps, ring), target);
        if (d >= target) break;
        goshmemi_proxy_waited(ps, &w, goshmemi_proxy_ring_index(ps, ring), GOSHMEMI_PROXY_WAIT_DONE);
    }
    goshmemi_proxy_completion_acquire();
}

/* Waits for the reply of ticket t, acknowledges it and returns its value. */
GOSHMEMI_COLD uint64_t goshmemi_proxy_wait_reply(goshmemi_proxy_state_t *ps, goshmemi_proxy_ring_t *ring, uint64_t t)
{
    goshmemi_proxy_reply_t *rs = (goshmemi_proxy_reply_t *)(uintptr_t)goshmemi_proxy_cfg_u64(&ring->replies) +
                                 (t & ((1ull << goshmemi_proxy_cfg_u32(&ring->log2_slots)) - 1));
    goshmemi_proxy_waiter_t w = {0, 0, 0};
    uint64_t tk;
    while (((tk = goshmemi_relaxed_load_u64(&rs->ticket, 1)) & ~GOSHMEMI_PROXY_DONE_ERR) != t + 1)
        goshmemi_proxy_waited(ps, &w, goshmemi_proxy_ring_index(ps, ring), GOSHMEMI_PROXY_WAIT_REPLY);
    if (GOSHMEMI_UNLIKELY(tk & GOSHMEMI_PROXY_DONE_ERR)) goshmemi_proxy_rejected(ps, goshmemi_proxy_ring_index(ps, ring), t);
    goshmemi_proxy_completion_acquire();
    uint64_t v = goshmemi_relaxed_load_u64(&rs->value, 1);
    goshmemi_order_fence(1); /* the value is read before the slot is released */
    goshmemi_relaxed_store_u64(&rs->ack, tk, 1);
    return v;
}

/* Waits until the reply slot of ticket t is free (its previous request's
 * reply was read). */
GOSHMEMI_COLD void goshmemi_proxy_wait_reply_slot(goshmemi_proxy_state_t *ps, goshmemi_proxy_ring_t *ring, uint64_t t)
{
    goshmemi_proxy_reply_t *rs = (goshmemi_proxy_reply_t *)(uintptr_t)goshmemi_proxy_cfg_u64(&ring->replies) +
                                 (t & ((1ull << goshmemi_proxy_cfg_u32(&ring->log2_slots)) - 1));
    goshmemi_proxy_waiter_t w = {0, 0, 0};
    while (goshmemi_relaxed_load_u64(&rs->ticket, 1) != goshmemi_relaxed_load_u64(&rs->ack, 1))
        goshmemi_proxy_waited(ps, &w, goshmemi_proxy_ring_index(ps, ring), GOSHMEMI_PROXY_WAIT_REPLY);
}

/* ---- enqueue ------------------------------------------------------------- */

#define GOSHMEMI_PROXY_POST_RELEASE 1 /* a referenced payload precedes: payload_to_worker_barrier */
#define GOSHMEMI_PROXY_POST_REPLY 2   /* the request answers in its reply slot */

/* Writes the request of ticket t (and its extension slot) once t's slot is
 * free: the reply-slot wait, the payload barrier, then ONE 16-byte store. */
GOSHMEMI_FN void goshmemi_proxy_publish(goshmemi_proxy_state_t *ps, const goshmemi_proxy_ringcfg_t *c, uint64_t t,
                                        uint64_t w0, uint64_t w1, int has_ext, uint64_t ext0, int flags)
{
    const uint64_t mask = (1ull << c->lg) - 1;
    if (flags & GOSHMEMI_PROXY_POST_REPLY) goshmemi_proxy_wait_reply_slot(ps, c->ring, t);
    if (has_ext) {
        /* the extension slot carries its own lap's phase in w0 (so a later
         * lap never mistakes it for a valid descriptor) and the operand in w1 */
        goshmemi_proxy_publish_v2(c->slots + 2 * ((t + 1) & mask), (((t + 1) >> c->lg) & 1) ^ 1, ext0);
        flags |= GOSHMEMI_PROXY_POST_RELEASE;
    }
    if (flags & GOSHMEMI_PROXY_POST_RELEASE) goshmemi_proxy_payload_to_worker_barrier();
    w0 |= ((t >> c->lg) & 1) ^ 1; /* phase: lap parity, 1 on lap 0 */
    if (c->mode == GOSHMEMI_PROXY_BASELINE)
        goshmemi_proxy_publish_release(c->slots + 2 * (t & mask), w0, w1);
    else
        goshmemi_proxy_publish_v2(c->slots + 2 * (t & mask), w0, w1);
}

/* The shared-ring half of goshmemi_proxy_post (MPSC and baseline): the
 * cached_tail load and the atom.add reservation leave together. */
GOSHMEMI_FN uint64_t goshmemi_proxy_post_shared(goshmemi_proxy_state_t *ps, goshmemi_proxy_ringcfg_t *c, uint64_t w0,
                                                uint64_t w1, int has_ext, uint64_t ext0, int flags)
{
    goshmemi_proxy_ring_t *ring = c->ring;
    const uint64_t k = has_ext ? 2 : 1;
    const uint64_t ct = goshmemi_relaxed_load_u64(&ring->cached_tail, 0);
    uint64_t t;
#if GOSHMEMI_CUDA
    unsigned long long old;
    asm volatile("atom.relaxed.gpu.global.add.u64 %0, [%1], %2;" : "=l"(old) : "l"(&ring->head), "l"((unsigned long long)k) : "memory");
    t = old;
#else
    t = __atomic_fetch_add(&ring->head, k, __ATOMIC_RELAXED);
#endif
    uint32_t lg = c->lg;
#if GOSHMEMI_CUDA
    asm volatile("" : "+r"(lg)); /* lg is used after the atomic: nvcc hoisted 1 << lg above it, and so made the reservation wait for line 0 */
#endif
    const uint64_t size = 1ull << lg;
    if (c->mode == GOSHMEMI_PROXY_BASELINE) {
        /* the baseline reads host-resident progress on every request */
        goshmemi_proxy_wait_space(ps, ring, t + k > size ? t + k - size : 0, c->mode);
    } else if (GOSHMEMI_UNLIKELY(t + k > ct + size)) {
        goshmemi_proxy_wait_space(ps, ring, t + k - size, c->mode);
    }
    goshmemi_proxy_publish(ps, c, t, w0, w1, has_ext, ext0, flags);
    return t;
}

/* Posts one request (w0 without the phase bit, w1) on the ring of c,
 * preceded by an extension slot {phase, ext0} when has_ext; returns its
 * ticket. SPSC (a reserved ring in the tuned protocol) uses the head and
 * cached_tail that goshmemi_proxy_ring_for loaded and keeps them current
 * in c, so a loop of posts through one c loads nothing more. MPSC loads
 * cached_tail and issues atom.add on head without waiting for it (a stale
 * cached_tail only sends the producer to wait_space, which reads the real
 * index); on the default context (c->ctx == 0: never SPSC) neither waits
 * for line 0 either. */
GOSHMEMI_FN uint64_t goshmemi_proxy_post(goshmemi_proxy_state_t *ps, goshmemi_proxy_ringcfg_t *c, uint64_t w0, uint64_t w1,
                                         int has_ext, uint64_t ext0, uint64_t ext1, int flags)
{
    (void)ext1;
    /* the default context first, on its own test: the compiler would
     * otherwise fold "ctx != 0 && mode == SPSC" into one predicate, and the
     * reservation would wait for line 0's mode */
    if (c->ctx == 0) return goshmemi_proxy_post_shared(ps, c, w0, w1, has_ext, ext0, flags);
    if (GOSHMEMI_LIKELY(c->mode == GOSHMEMI_PROXY_SPSC)) {
        const uint64_t k = has_ext ? 2 : 1, t = c->head;
        if (GOSHMEMI_UNLIKELY(t + k > c->cached_tail + (1ull << c->lg)))
            c->cached_tail = goshmemi_proxy_wait_space(ps, c->ring, t + k - (1ull << c->lg), c->mode);
        goshmemi_proxy_publish(ps, c, t, w0, w1, has_ext, ext0, flags);
        c->head = t + k;
        c->ring->head = t + k;
        return t;
    }
    return goshmemi_proxy_post_shared(ps, c, w0, w1, has_ext, ext0, flags); /* baseline */
}

/* ---- a private producer in registers (extension) ------------------------ *
 * goshmemx_proxy_producer_t is the tuned producer at its smallest: the
 * thread that owns a context
 * c >= 1 (tuned protocol: one producer per ring) holds the ring's head and
 * its cached consumer index in registers, so an inline request costs no
 * load at all, only the one posted 16-byte store of the descriptor and a
 * posted store of the new head (which keeps ring->head exact for quiet and
 * for a later goshmemx_proxy_producer_open). The ring is re-read only when
 * it looks full (ring->done, as above). Rules: open it in the one thread
 * that posts on c; while it is open, post on c only through it (a
 * goshmemx_ctx_* call on c in between would leave its head stale); complete
 * with goshmem_ctx_quiet(c) as usual. On a context whose ring is not tuned
 * (c == 0, or GOSHMEM_PROXY_MODE=baseline) and for a PE reached by
 * load/store, the calls fall back to goshmemx_ctx_uint64_p. The posting
 * calls are in remote.h (they need its dispatch). */
typedef struct goshmemx_proxy_producer {
    goshmemi_proxy_ringcfg_t c;
    uint64_t head;  /* next ticket */
    uint64_t limit; /* cached consumer index + nslots: tickets below are free */
    uint64_t base;  /* this PE's heap base (heap_base[my_pe]) */
    uint64_t last;  /* heap_size - 8: the largest offset of an 8-byte target */
    int ctx;
    int tuned; /* the ring is SPSC: the fast path applies */
} goshmemx_proxy_producer_t;

/* Opens context ctx's producer (one load of the ring's lines). */
GOSHMEMI_FN goshmemx_proxy_producer_t goshmemx_proxy_producer_open(int ctx)
{
    goshmemx_proxy_producer_t p;
    goshmemi_proxy_state_t *ps = goshmemi_proxy_state();
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    p.ctx = ctx;
    p.head = p.limit = 0;
    p.tuned = 0;
    p.base = cs->heap_base[cs->my_pe];
    p.last = cs->heap_size >= 8 ? cs->heap_size - 8 : 0;
    p.c.ring = NULL;
    p.c.slots = NULL;
    p.c.lg = p.c.mode = 0;
    p.c.ctx = ctx;
    p.c.head = p.c.cached_tail = 0;
    if (ps == NULL) return p; /* no proxy: every PE by load/store */
    p.c = goshmemi_proxy_ring_for(ps, ctx);
    p.tuned = ctx != 0 && p.c.mode == GOSHMEMI_PROXY_SPSC;
    p.head = p.c.head;
    p.limit = p.c.cached_tail + (1ull << p.c.lg);
    return p;
}

/* The ring looked full: waits for the slot of ticket head and returns the
 * new limit (scalars in and out, so the producer stays in registers). */
GOSHMEMI_COLD uint64_t goshmemi_proxy_producer_wait(goshmemi_proxy_ring_t *ring, uint64_t head, uint32_t lg)
{
    return goshmemi_proxy_wait_space(goshmemi_proxy_state(), ring, head + 1 - (1ull << lg), GOSHMEMI_PROXY_SPSC) +
           (1ull << lg);
}

/* A weak store of the producer's head (posted; only quiet reads it). */
GOSHMEMI_FN void goshmemi_proxy_store_head(goshmemi_proxy_ring_t *ring, uint64_t head)
{
#if GOSHMEMI_CUDA
    asm volatile("st.global.u64 [%0], %1;" ::"l"(&ring->head), "l"((unsigned long long)head) : "memory");
#else
    ring->head = head;
#endif
}

/* Posts ticket t (a free slot) of p's tuned ring: descriptor {w0 with t's
 * phase, w1} in one posted 16-byte store, then the head (posted too: it
 * keeps quiet exact, nothing waits for it). */
GOSHMEMI_FN void goshmemi_proxy_producer_store(goshmemx_proxy_producer_t *p, uint64_t t, uint64_t w0, uint64_t w1)
{
    const uint32_t lg = p->c.lg;
    goshmemi_proxy_publish_v2(p->c.slots + 2 * (t & ((1ull << lg) - 1)), w0 | (((t >> lg) & 1) ^ 1), w1);
    p->head = t + 1;
    goshmemi_proxy_store_head(p->c.ring, t + 1);
}

/* ---- the backend of remote.h (contract at the top of remote.h) ---------- */

GOSHMEMI_FN uint64_t goshmemi_proxy_load_bytes(const void *src, size_t n)
{
    uint64_t w = 0;
    const unsigned char *s = (const unsigned char *)src;
    if (n == 8 && ((uintptr_t)src & 7) == 0) return *(const uint64_t *)src;
    for (size_t i = 0; i < n; i++) w |= (uint64_t)s[i] << (8 * i);
    return w;
}

GOSHMEMI_FN void goshmemi_proxy_store_bytes(void *dst, uint64_t w, size_t n)
{
    unsigned char *d = (unsigned char *)dst;
    for (size_t i = 0; i < n; i++) d[i] = (unsigned char)(w >> (8 * i));
}

/* Symmetric offset of [p, p+n) in this PE's heap, or UINT64_MAX. */
GOSHMEMI_FN uint64_t goshmemi_proxy_local_off(const void *p, size_t n)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    uint64_t off = (uint64_t)(uintptr_t)p - cs->heap_base[cs->my_pe];
    if (off >= cs->heap_size || (uint64_t)n > cs->heap_size - off) return UINT64_MAX;
    return off;
}

/* The registered buffer (table `regs`) that holds all of [p, p+n): its
 * slot + 1, the descriptor's arg, with *off the offset of p in it; 0 when
 * no registered buffer holds the range. Out of line: only sources and
 * destinations outside the heap come here. */
GOSHMEMI_COLD uint32_t goshmemi_proxy_reg_find(goshmemi_proxy_state_t *ps, const void *p, size_t n, uint64_t *off)
{
    const goshmemi_proxy_regs_t *rs = (const goshmemi_proxy_regs_t *)(uintptr_t)goshmemi_proxy_cfg_u64(&ps->regs);
    if (rs == NULL) return 0;
    const uint64_t a = (uint64_t)(uintptr_t)p;
    uint32_t m = goshmemi_relaxed_load_u32(&rs->n, 0);
    if (m > GOSHMEMI_PROXY_MAX_REGS) m = GOSHMEMI_PROXY_MAX_REGS;
    for (uint32_t i = 0; i < m; i++) {
        /* A scan with relaxed loads finds a candidate. A slot the host
         * changes meanwhile may read as a mix of its entries, so the
         * candidate is confirmed from one consistent reading: end, base,
         * then end again, each load ordered after the one before. The host
         * clears end before it changes base and writes end last when it
         * fills a slot, so equal ends mean base belongs to the entry that
         * end describes; a slot refilled meanwhile is read again. A buffer
         * registered throughout is always found, with its own base. */
        uint64_t end = goshmemi_relaxed_load_u64(&rs->reg[i].end, 0);
        GOSHMEMI_REG_LOAD_HOOK();
        uint64_t base = goshmemi_relaxed_load_u64(&rs->reg[i].base, 0);
        GOSHMEMI_REG_LOAD_HOOK();
        if (end == 0 || a < base || a >= end || (uint64_t)n > end - a) continue;
        end = goshmemi_acquire_load_u64(&rs->reg[i].end, 1);
        GOSHMEMI_REG_LOAD_HOOK();
        while (end != 0) {
            base = goshmemi_acquire_load_u64(&rs->reg[i].base, 1);
            GOSHMEMI_REG_LOAD_HOOK();
            const uint64_t again = goshmemi_relaxed_load_u64(&rs->reg[i].end, 0);
            GOSHMEMI_REG_LOAD_HOOK();
            if (again == end) break;
            end = again;
        }
        if (end != 0 && a >= base && a < end && (uint64_t)n <= end - a) {
            *off = a - base;
            return i + 1;
        }
    }
    return 0;
}

/* An inline put of the n (1..8) low-order bytes of v: the enqueue a p is
 * (remote.h's goshmemi_remote_put_value keeps v in a register). */
GOSHMEMI_FN void goshmemi_proxy_put_value(int ctx, int pe, uint64_t dst_off, uint64_t v, size_t n)
{
    goshmemi_proxy_state_t *ps = goshmemi_proxy_state();
    goshmemi_proxy_ringcfg_t ring = goshmemi_proxy_ring_for(ps, ctx);
    goshmemi_proxy_post(ps, &ring, goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_PUT_INLINE, pe, (uint32_t)n, dst_off), v, 0, 0, 0, 0);
}

GOSHMEMI_FN void goshmemi_proxy_put(int ctx, int pe, uint64_t dst_off, const void *src, size_t n, int nbi)
{
    goshmemi_proxy_state_t *ps = goshmemi_proxy_state();
    if (n - 1 < 8) { /* 1..8 bytes inline: the source is reusable at once */
        goshmemi_proxy_put_value(ctx, pe, dst_off, goshmemi_proxy_load_bytes(src, n), n);
        return;
    }
    goshmemi_proxy_ringcfg_t ring = goshmemi_proxy_ring_for(ps, ctx);
    if (n == 0) return;
    uint64_t loff = goshmemi_proxy_local_off(src, n);
    uint32_t reg = 0; /* the descriptor's arg: 0 = the heap, else a registered buffer's slot + 1 */
    if (loff == UINT64_MAX && (reg = goshmemi_proxy_reg_find(ps, src, n, &loff)) == 0) {
        /* neither symmetric nor registered: 8-byte inline chunks */
        const unsigned char *s = (const unsigned char *)src;
        for (size_t o = 0; o < n; o += 8) {
            size_t c = n - o < 8 ? n - o : 8;
            goshmemi_proxy_post(ps, &ring, goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_PUT_INLINE, pe, (uint32_t)c, dst_off + o),
                                goshmemi_proxy_load_bytes(s + o, c), 0, 0, 0, 0);
        }
        return;
    }
    uint64_t t = 0;
    int flags = GOSHMEMI_PROXY_POST_RELEASE;
    for (uint64_t o = 0; o < n; o += GOSHMEMI_PROXY_CHUNK) {
        uint64_t c = n - o < GOSHMEMI_PROXY_CHUNK ? n - o : GOSHMEMI_PROXY_CHUNK;
        t = goshmemi_proxy_post(ps, &ring, goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_PUT, pe, reg, dst_off + o),
                                goshmemi_proxy_w1_span(loff + o, c), 0, 0, 0, flags);
        flags = 0;
    }
    if (!nbi) goshmemi_proxy_wait_done(ps, ring.ring, t + 1); /* the worker has read the source */
}

GOSHMEMI_FN void goshmemi_proxy_get(int ctx, int pe, void *dst, uint64_t src_off, size_t n, int nbi)
{
    goshmemi_proxy_state_t *ps = goshmemi_proxy_state();
    goshmemi_proxy_ringcfg_t ring = goshmemi_proxy_ring_for(ps, ctx);
    if (n == 0) return;
    uint64_t loff = n > 8 ? goshmemi_proxy_local_off(dst, n) : UINT64_MAX;
    uint32_t reg = 0; /* the descriptor's arg: 0 = the heap, else a registered buffer's slot + 1 */
    if (loff == UINT64_MAX && (n <= 8 || (reg = goshmemi_proxy_reg_find(ps, dst, n, &loff)) == 0)) {
        /* small, or neither symmetric nor registered: through reply slots, 8 bytes each */
        unsigned char *d = (unsigned char *)dst;
        for (size_t o = 0; o < n; o += 8) {
            size_t c = n - o < 8 ? n - o : 8;
            uint64_t t = goshmemi_proxy_post(ps, &ring, goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_GET_REPLY, pe, (uint32_t)c, src_off + o),
                                             0, 0, 0, 0, GOSHMEMI_PROXY_POST_REPLY);
            uint64_t v = goshmemi_proxy_wait_reply(ps, ring.ring, t);
            if (c == 8 && ((uintptr_t)(d + o) & 7) == 0)
                *(uint64_t *)(d + o) = v;
            else
                goshmemi_proxy_store_bytes(d + o, v, c);
        }
        return;
    }
    uint64_t t = 0;
    for (uint64_t o = 0; o < n; o += GOSHMEMI_PROXY_CHUNK) {
        uint64_t c = n - o < GOSHMEMI_PROXY_CHUNK ? n - o : GOSHMEMI_PROXY_CHUNK;
        t = goshmemi_proxy_post(ps, &ring, goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_GET, pe, reg, src_off + o),
                                goshmemi_proxy_w1_span(loff + o, c), 0, 0, 0, 0);
    }
    if (!nbi) goshmemi_proxy_wait_done(ps, ring.ring, t + 1);
}

GOSHMEMI_FN uint64_t goshmemi_proxy_amo(int ctx, int pe, uint64_t off, int op, int bytes, uint64_t v, uint64_t cmp,
                                        int want_result)
{
    goshmemi_proxy_state_t *ps = goshmemi_proxy_state();
    goshmemi_proxy_ringcfg_t ring = goshmemi_proxy_ring_for(ps, ctx);
    if (GOSHMEMI_UNLIKELY((bytes != 4 && bytes != 8) || (unsigned)op > GOSHMEMI_AMO_XOR))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_INVALID_ARG, GOSHMEMI_ERROR_INFO(op, bytes),
                      "proxy AMO: op must be GOSHMEMI_AMO_* and the width 4 or 8 bytes");
    if (op == GOSHMEMI_AMO_FETCH || op == GOSHMEMI_AMO_CSWAP) want_result = 1;
    uint32_t arg = (uint32_t)op | (bytes == 8 ? GOSHMEMI_PROXY_AMO_8B : 0) | (want_result ? GOSHMEMI_PROXY_AMO_REPLY : 0);
    int ext = op == GOSHMEMI_AMO_CSWAP;
    if (ext) arg |= GOSHMEMI_PROXY_AMO_EXT;
    uint64_t t = goshmemi_proxy_post(ps, &ring, goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_AMO, pe, arg, off), v, ext, cmp, 0,
                                     want_result ? GOSHMEMI_PROXY_POST_REPLY : 0);
    return want_result ? goshmemi_proxy_wait_reply(ps, ring.ring, t) : 0;
}

GOSHMEMI_FN void goshmemi_proxy_put_signal(int ctx, int pe, uint64_t dst_off, const void *src, size_t n, uint64_t sig_off,
                                           uint64_t sig_val, int sig_op, int nbi)
{
    goshmemi_proxy_state_t *ps = goshmemi_proxy_state();
    goshmemi_check_signal_op(sig_op, pe); /* the ring carries GOSHMEMI_AMO_*, never sig_op */
    /* payload, then the signal on the same ring: the worker applies them in
     * order (stream order), so the signal lands after the payload */
    goshmemi_proxy_put(ctx, pe, dst_off, src, n, 1);
    goshmemi_proxy_ringcfg_t ring = goshmemi_proxy_ring_for(ps, ctx); /* after the put: its head is current */
    int op = sig_op == GOSHMEM_SIGNAL_ADD ? GOSHMEMI_AMO_ADD : GOSHMEMI_AMO_SET;
    uint64_t t = goshmemi_proxy_post(ps, &ring,
                                     goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_AMO, pe, (uint32_t)op | GOSHMEMI_PROXY_AMO_8B, sig_off),
                                     sig_val, 0, 0, 0, 0);
    if (!nbi && n > 8) goshmemi_proxy_wait_done(ps, ring.ring, t + 1);
}

/* Requests of one thread on one ring are applied in order: nothing to do. */
GOSHMEMI_FN void goshmemi_proxy_fence(int ctx) { (void)ctx; }

/* Completes every request posted so far on ctx's rings (ctx < 0: on every
 * ring), then acquires. */
GOSHMEMI_FN void goshmemi_proxy_quiet(int ctx)
{
    goshmemi_proxy_state_t *ps = goshmemi_proxy_state();
    uint32_t first = 0, n = goshmemi_proxy_cfg_u32(&ps->nrings);
    if (ctx >= 0) {
        uint32_t nctx = goshmemi_proxy_cfg_u32(&ps->nctx);
        if (GOSHMEMI_UNLIKELY((uint32_t)ctx >= nctx))
            goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_INVALID_ARG, GOSHMEMI_ERROR_INFO(ctx, nctx),
                          "device context out of range [0, proxy contexts) (GOSHMEM_PROXY_CONTEXTS)");
        first = ps->ctx_first[ctx];
        n = ps->ctx_count[ctx];
    }
    /* groups of 8 rings: the 16 loads of a group are independent, so they
     * are in flight together (one L2 round trip, not 16) */
    for (uint32_t g = first; g < first + n; g += 8) {
        uint64_t head[8], done[8];
        uint32_t m = first + n - g < 8 ? first + n - g : 8;
#if GOSHMEMI_CUDA
#pragma unroll
#endif
        for (uint32_t i = 0; i < 8; i++) {
            if (i < m) {
                head[i] = goshmemi_relaxed_load_u64(&ps->rings[g + i].head, 0);
                done[i] = goshmemi_relaxed_load_u64(&ps->rings[g + i].done, 1);
            }
        }
#if GOSHMEMI_CUDA
#pragma unroll
#endif
        for (uint32_t i = 0; i < 8; i++)
            if (i < m && done[i] != head[i]) goshmemi_proxy_wait_done(ps, &ps->rings[g + i], head[i]); /* traps on the error bit */
    }
    goshmemi_proxy_completion_acquire();
}

#endif /* GOSHMEM_PROXY_H */
