package devhost

/*
#cgo CFLAGS: -std=c11 -O1 -I${SRCDIR}/../../../include
#include <setjmp.h>
#include <stdint.h>
#include <goshmem.h>

static _Thread_local jmp_buf gc_jb;
static _Thread_local uint64_t gc_code;
static void gc_trap(uint64_t code, uint64_t info, const char *what)
{
	(void)info;
	(void)what;
	gc_code = code;
	longjmp(gc_jb, 1);
}

// gc_coll runs one device collective (op: see the Coll* constants in coll.go).
static int gc_coll(uintptr_t st, int op, int team, uintptr_t d, uintptr_t s, size_t n, int root)
{
	goshmemx_host_trap_hook = gc_trap;
	goshmemx_host_set_state((goshmemi_device_state_t *)st);
	if (setjmp(gc_jb)) return (int)gc_code;
	switch (op) {
	case 0: return goshmem_int32_sum_reduce(team, (int32_t *)d, (const int32_t *)s, n);
	case 1: return goshmem_int32_max_reducescatter(team, (int32_t *)d, (const int32_t *)s, n);
	case 2: return goshmem_broadcastmem(team, (void *)d, (const void *)s, n, root);
	case 3: return goshmem_fcollectmem(team, (void *)d, (const void *)s, n);
	case 4: return goshmem_alltoallmem(team, (void *)d, (const void *)s, n);
	case 5: return goshmem_bfloat16_sum_reduce(team, (goshmem_bfloat16_t *)d, (const goshmem_bfloat16_t *)s, n);
	default: return goshmem_team_sync(team);
	}
}
static uint64_t gc_error_info(uintptr_t st) { return ((goshmemi_device_state_t *)st)->error_info; }
static void gc_set_heap_base(uintptr_t st, int pe, uint64_t base)
{
	((goshmemi_device_state_t *)st)->heap_base[pe] = base;
}
*/
import "C"

// Collectives Coll runs (include/goshmem/coll_data.h, thread form).
const (
	CollSumReduceInt32     = 0 // goshmem_int32_sum_reduce(team, dst, src, n)
	CollMaxReduceScatter32 = 1 // goshmem_int32_max_reducescatter(team, dst, src, n)
	CollBroadcastMem       = 2 // goshmem_broadcastmem(team, dst, src, n bytes, root)
	CollFCollectMem        = 3 // goshmem_fcollectmem(team, dst, src, n bytes)
	CollAllToAllMem        = 4 // goshmem_alltoallmem(team, dst, src, n bytes)
	CollSumReduceBF16      = 5 // goshmem_bfloat16_sum_reduce(team, dst, src, n)
	CollTeamSync           = 6 // goshmem_team_sync(team)
)

// Coll runs one device collective of this PE (one thread); a trap comes back
// as a *Trap.
func (p PE) Coll(op, team int, dst, src uintptr, n, root int) error {
	rc := C.gc_coll(C.uintptr_t(p.State), C.int(op), C.int(team), C.uintptr_t(dst), C.uintptr_t(src), C.size_t(n), C.int(root))
	if rc == 0 {
		return nil
	}
	return &Trap{Code: uint64(rc), Info: uint64(C.gc_error_info(C.uintptr_t(p.State)))}
}

// SetHeapBase makes PE pe load/store reachable (base != 0) or remote (0)
// in this PE's device state: how a test builds a mixed team.
func (p PE) SetHeapBase(pe int, base uintptr) {
	C.gc_set_heap_base(C.uintptr_t(p.State), C.int(pe), C.uint64_t(base))
}
