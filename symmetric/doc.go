// Package symmetric holds the two leaf pieces of goshmem's host symmetric
// heap: the deterministic offset [Allocator] and the shared-memory [Region].
//
// # Heap model
//
// Every PE owns one region: a POSIX shared-memory object (a file in
// /dev/shm) of GOSHMEM_SYMMETRIC_SIZE bytes, created by that PE with
// [CreateRegion] and mapped by every other PE of the node with
// [OpenRegion]. The region is reserved sparsely: ftruncate sets its length
// but no page is committed until it is first touched, so a large
// GOSHMEM_SYMMETRIC_SIZE costs nothing until it is used.
//
// Symmetric allocation is a collective: every PE calls Alloc and Free in
// the same order with the same arguments. Each PE runs its own [Allocator]
// over [0, GOSHMEM_SYMMETRIC_SIZE), and because the allocator is
// deterministic (no randomness, no dependence on addresses, maps or
// timing) every PE computes the same offset for the same call. An object
// therefore has one offset everywhere, and its address on PE p is
//
//	base[p] + offset
//
// where base[p] is the address at which this process mapped PE p's region
// ([Region.Base]). Mappings of the same region sit at different addresses
// in different processes; offsets are the only thing that is symmetric.
//
// # Capacity
//
// tmpfs accepts an ftruncate to any length, and pages are committed only
// on first touch; if the tmpfs fills up, the touching store gets SIGBUS.
// [CreateRegion] therefore refuses a region larger than the whole tmpfs
// (it could never be fully used), and [CheckShmCapacity] lets the caller
// check the node-wide sum of reservations before creating regions.
// Reserving beyond the currently free space is allowed: that is the point
// of lazy commit.
//
// # Concurrency
//
// Allocator and Region methods are safe for concurrent use, but the
// allocator's determinism across PEs only holds if each PE issues the same
// sequence of calls, which the caller (the shmem runtime) guarantees by
// serializing collective allocation.
package symmetric
