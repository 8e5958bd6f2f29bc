/* goshmem device API: barriers and team synchronization.
 *
 * Algorithm: a team of at most GOSHMEMI_SYNC_FLAT_MAX (8) members syncs
 * flat: member i stores the barrier's epoch into word i of psync line 0 on
 * every other member, then waits until each other member's word there
 * reaches the epoch (one round where dissemination takes ceil(log2 n),
 * each a store and a poll in sequence). A larger team runs a
 * dissemination barrier (ceil(log2 n) rounds): in round k, the member with
 * index i stores the epoch into round k's psync word of member
 * (i + 2^k) mod n, then waits for its own round-k word to reach the epoch.
 * Epochs only grow, so a word that already holds a later epoch also
 * releases the wait (a partner can only be one barrier ahead after this
 * barrier completed everywhere). Every module of a job must use the same
 * scheme for a team (they share its epoch): the limit is not a setting.
 *
 * Memory layout (device_state.h): psync words at the front of every PE's
 * device heap; team slot s, round k is the uint64_t at
 *     heap_base[pe] + goshmemi_team_slot_off(s) + k*GOSHMEMI_PSYNC_LINE
 * (one 64-byte line per word: no false sharing between rounds); a flat
 * sync's word of member i is the i-th uint64_t of line 0. The epoch
 * of slot s is state->team_epoch[s], bumped once per barrier by the one
 * thread that runs it. The host zeroes the psync area and the epochs at
 * init, and when it (re)assigns a slot to a new team it sets team_epoch[s]
 * to the same value on every member (after zeroing that slot's lines).
 * Slot 0 is GOSHMEM_TEAM_WORLD's; the world team is derived from my_pe and
 * n_pes, so barrier_all reads no row of the team table. A team handle
 * indexes the table (state->teams, max_teams rows in device memory; the
 * first GOSHMEMI_INLINE_TEAMS rows are read from the state itself); rows,
 * pointers and max_teams are read-only while kernels run, so they come
 * from the constant copy of the state (goshmemi_team_row).
 *
 * Ordering: dissemination: one fence.acq_rel per round (acquire of this
 * round's arrival, release of the next round's store), so causality is
 * transitive through the intermediate PEs; flat: one release (fence, then
 * the relaxed arrival stores) and an acquire poll of every other member's
 * word. Either way, after the barrier each PE sees every store any
 * member made before entering it (given quiet for remote puts: barrier
 * does that quiet; sync does not complete outstanding puts but orders the
 * caller's own stores, as OpenSHMEM sync). Scope as in ordering.h.
 *
 * Who calls: exactly ONE thread per PE for the thread forms (goshmem_*),
 * one whole warp for _warp, one whole block for _block, and every member
 * PE must call. Two blocks of one PE calling concurrently corrupt the
 * epoch; and all PEs' kernels must be running at the same time (a barrier
 * across kernels that the GPU time-slices never completes: use MPS or a
 * cooperative/collective launch). Ref: NVSHMEM nvshmem_barrier_all /
 * nvshmemx_barrier_all_{warp,block}; OpenSHMEM 1.5 §9.9.3-4, §9.5.
 *
 * Include <goshmem.h>, not this file.
 */
#ifndef GOSHMEM_COLL_H
#define GOSHMEM_COLL_H

#include "quiet.h"
#include "rma.h" /* group sync helpers */

typedef struct goshmemi_team_view {
    int32_t start, stride, size, my_index, slot;
} goshmemi_team_view_t;

/* Row team of st's team table: a row of the first GOSHMEMI_INLINE_TEAMS
 * from the state (the constant cache on a GPU), a later one from the table
 * in device memory. team < st->max_teams. By value, loaded in each branch:
 * a pointer chosen between the two would be a generic one, whose loads
 * bypass the constant cache (and hold more registers). */
GOSHMEMI_FN goshmemi_team_t goshmemi_team_row(const goshmemi_device_state_t *st, goshmem_team_t team)
{
    if ((uint32_t)team < GOSHMEMI_INLINE_TEAMS) return st->team_inline[team];
    return st->teams[team];
}

/* Resolves team to its member layout; traps on a handle out of range
 * (info: team, max_teams), an unused row or when this PE is not a member
 * (info: team, my_pe). */
GOSHMEMI_FN goshmemi_team_view_t goshmemi_team_view(goshmem_team_t team)
{
    const goshmemi_device_state_t *st = goshmemi_cstate();
    goshmemi_team_view_t v;
    if (team == GOSHMEM_TEAM_WORLD) {
        v.start = 0;
        v.stride = 1;
        v.size = st->n_pes;
        v.my_index = st->my_pe;
        v.slot = 0;
        return v;
    }
    const uint32_t max_teams = st->max_teams;
    if (GOSHMEMI_UNLIKELY((uint32_t)team >= max_teams))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_BAD_TEAM, GOSHMEMI_ERROR_INFO(team, max_teams),
                      "team handle out of range [0, max_teams): GOSHMEM_MAX_TEAMS");
    const goshmemi_team_t t = goshmemi_team_row(st, team);
    v.start = t.start;
    v.stride = t.stride;
    v.size = t.size;
    v.my_index = t.my_index;
    v.slot = t.slot;
    if (GOSHMEMI_UNLIKELY(v.size <= 0 || v.my_index < 0 || v.my_index >= v.size || (uint32_t)v.slot >= max_teams))
        goshmemi_fail(goshmemi_state(), GOSHMEMI_ERR_BAD_TEAM, GOSHMEMI_ERROR_INFO(team, st->my_pe),
                      "team not initialized, or this PE is not a member");
    return v;
}

/* Teams up to this size sync flat (see top of file); one word per member
 * in psync line 0. */
#define GOSHMEMI_SYNC_FLAT_MAX 8

/* Flat or dissemination sync over team view v (see top of file). initial_fence:
 * order the caller's prior stores before its first arrival (skipped when
 * the caller just ran quiet, which is stronger).
 * Flat: one fence (none after quiet), then relaxed arrival stores, then an
 * acquire poll of each other member's word; a remote member's arrival is an
 * inline put on this thread's ring after a system-scope fence.
 * Dissemination, per round: the arrival is a release store (round 0 after quiet:
 * a relaxed store, quiet's fence.sc already orders everything before it),
 * the poll an acquire load; release after acquire is cumulative, so what a
 * PE acquired in round k is released with its round k+1 arrival. No
 * fence.acq_rel between rounds: st.release is a MEMBAR.ALL without the L1
 * invalidate, ld.acquire an invalidate without the MEMBAR. */
GOSHMEMI_FN void goshmemi_team_sync_thread(goshmemi_team_view_t v, int initial_fence)
{
    const goshmemi_device_state_t *cs = goshmemi_cstate();
    int sys = goshmemi_sys_scope();
    if (v.size <= 1) {
        if (initial_fence) goshmemi_order_fence(sys);
        return;
    }
    uint64_t *ep = cs->team_epoch + v.slot;
    uint64_t epoch = *ep + 1;
    *ep = epoch;
    uintptr_t psync = (uintptr_t)cs->heap_base[cs->my_pe] + (uintptr_t)goshmemi_team_slot_off(v.slot);
    if (v.size <= GOSHMEMI_SYNC_FLAT_MAX) {
        uint64_t *line = (uint64_t *)psync;
        int fenced = 0;
        if (initial_fence) goshmemi_order_fence(sys);
        for (int32_t d = 1; d < v.size; d++) {
            int32_t j = v.my_index + d < v.size ? v.my_index + d : v.my_index + d - v.size;
            int32_t to = v.start + j * v.stride;
            uint64_t off;
            uint64_t *peer_word = (uint64_t *)goshmemi_peer_or_remote(line + v.my_index, to, sizeof(uint64_t), &off);
            if (GOSHMEMI_UNLIKELY(peer_word == NULL)) {
                if (!fenced) goshmemi_order_fence(1);
                fenced = 1;
                goshmemi_remote_put_value(0, to, off, epoch, sizeof(uint64_t));
            } else {
                goshmemi_relaxed_store_u64(peer_word, epoch, sys);
            }
        }
        for (int32_t d = 1; d < v.size; d++) {
            int32_t j = v.my_index + d < v.size ? v.my_index + d : v.my_index + d - v.size;
            while (goshmemi_acquire_load_u64(line + j, sys) < epoch) goshmemi_poll_pause();
        }
        return;
    }
    int k = 0;
    for (int32_t dist = 1; dist < v.size; dist <<= 1, k++) {
        int32_t to = v.start + ((v.my_index + dist) % v.size) * v.stride;
        uint64_t *word = (uint64_t *)(psync + (uintptr_t)k * GOSHMEMI_PSYNC_LINE);
        uint64_t off;
        uint64_t *peer_word = (uint64_t *)goshmemi_peer_or_remote(word, to, sizeof(uint64_t), &off);
        if (GOSHMEMI_UNLIKELY(peer_word == NULL)) {
            /* a remote PE (remote.h): an inline put on this thread's ring, after
             * its earlier requests; the fence releases this thread's other stores */
            goshmemi_order_fence(1);
            goshmemi_remote_put_value(0, to, off, epoch, sizeof(uint64_t));
        } else if (k == 0 && !initial_fence) {
            goshmemi_relaxed_store_u64(peer_word, epoch, sys); /* ordered by the caller's quiet */
        } else {
            goshmemi_release_store_u64(peer_word, epoch, sys);
        }
        while (goshmemi_acquire_load_u64(word, sys) < epoch) goshmemi_poll_pause();
    }
}

/* Runs body on one thread of GROUP with group syncs around it. */
#define GOSHMEMI_GROUP_ONE(GROUP, body)                                                                               \
    do {                                                                                                              \
        GOSHMEMI_SYNC_##GROUP();                                                                                      \
        if (GOSHMEMI_LEADER_##GROUP()) {                                                                              \
            body;                                                                                                     \
        }                                                                                                             \
        GOSHMEMI_SYNC_##GROUP();                                                                                      \
    } while (0)

#define GOSHMEMI_COLL_DEF(PREFIX, SUFFIX, GROUP)                                                                      \
    /* Barrier over all PEs: quiet (all prior puts/AMOs/stores of the group complete), then wait until every PE       \
     * arrived. After it returns, every PE's pre-barrier stores are visible. Returns 0 (NVSHMEM returns void here;    \
     * an int a caller ignores is the same call). */                                                                  \
    GOSHMEMI_FN int PREFIX##_barrier_all##SUFFIX(void)                                                                \
    {                                                                                                                 \
        GOSHMEMI_GROUP_ONE(GROUP, goshmem_quiet(); goshmemi_team_sync_thread(goshmemi_team_view(GOSHMEM_TEAM_WORLD), 0)); \
        return 0;                                                                                                     \
    }                                                                                                                 \
    /* Waits until every PE arrived; orders (does not complete) prior stores. Returns 0. */                           \
    GOSHMEMI_FN int PREFIX##_sync_all##SUFFIX(void)                                                                   \
    {                                                                                                                 \
        GOSHMEMI_GROUP_ONE(GROUP, goshmemi_team_sync_thread(goshmemi_team_view(GOSHMEM_TEAM_WORLD), 1));              \
        return 0;                                                                                                     \
    }                                                                                                                 \
    /* barrier_all restricted to the members of team. Returns 0 (traps on a bad team). Ref: NVSHMEM nvshmem_barrier. */ \
    GOSHMEMI_FN int PREFIX##_barrier##SUFFIX(goshmem_team_t team)                                                     \
    {                                                                                                                 \
        GOSHMEMI_GROUP_ONE(GROUP, goshmem_quiet(); goshmemi_team_sync_thread(goshmemi_team_view(team), 0));           \
        return 0;                                                                                                     \
    }                                                                                                                 \
    /* sync_all restricted to the members of team. Returns 0. Ref: NVSHMEM nvshmem_team_sync. */                     \
    GOSHMEMI_FN int PREFIX##_team_sync##SUFFIX(goshmem_team_t team)                                                   \
    {                                                                                                                 \
        GOSHMEMI_GROUP_ONE(GROUP, goshmemi_team_sync_thread(goshmemi_team_view(team), 1));                            \
        return 0;                                                                                                     \
    }                                                                                                                 \
    /* team_sync under its OpenSHMEM 1.5 name (shmem_sync(team); NVSHMEM: #define nvshmem_sync nvshmem_team_sync). */ \
    GOSHMEMI_FN int PREFIX##_sync##SUFFIX(goshmem_team_t team) { return PREFIX##_team_sync##SUFFIX(team); }
GOSHMEMI_COLL_DEF(goshmem, , thread)
GOSHMEMI_COLL_DEF(goshmemx, _warp, warp)
GOSHMEMI_COLL_DEF(goshmemx, _block, block)
#undef GOSHMEMI_COLL_DEF

/* This PE's index in team, or -1 when not a member. */
GOSHMEMI_FN int goshmem_team_my_pe(goshmem_team_t team)
{
    const goshmemi_device_state_t *st = goshmemi_cstate();
    if (team == GOSHMEM_TEAM_WORLD) return st->my_pe;
    if ((uint32_t)team >= st->max_teams || goshmemi_team_row(st, team).size <= 0) return -1;
    return goshmemi_team_row(st, team).my_index;
}

/* Number of PEs in team, or -1 for an invalid team. */
GOSHMEMI_FN int goshmem_team_n_pes(goshmem_team_t team)
{
    const goshmemi_device_state_t *st = goshmemi_cstate();
    if (team == GOSHMEM_TEAM_WORLD) return st->n_pes;
    if ((uint32_t)team >= st->max_teams || goshmemi_team_row(st, team).size <= 0) return -1;
    return goshmemi_team_row(st, team).size;
}

/* PE index pe of src_team expressed in dest_team, or -1 when it is not a member. */
GOSHMEMI_FN int goshmem_team_translate_pe(goshmem_team_t src_team, int pe, goshmem_team_t dest_team)
{
    int n = goshmem_team_n_pes(src_team), m = goshmem_team_n_pes(dest_team);
    if (n < 0 || m < 0 || pe < 0 || pe >= n) return -1;
    const goshmemi_device_state_t *st = goshmemi_cstate();
    int world = pe, s0 = 0, s = 1;
    if (src_team != GOSHMEM_TEAM_WORLD) world = goshmemi_team_row(st, src_team).start + pe * goshmemi_team_row(st, src_team).stride;
    if (dest_team != GOSHMEM_TEAM_WORLD) {
        s0 = goshmemi_team_row(st, dest_team).start;
        s = goshmemi_team_row(st, dest_team).stride;
    }
    if (s == 0) return world == s0 ? 0 : -1;
    if ((world - s0) % s != 0) return -1;
    int idx = (world - s0) / s;
    return idx >= 0 && idx < m ? idx : -1;
}

#endif /* GOSHMEM_COLL_H */
