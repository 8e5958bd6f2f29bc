// Package symmetric holds the two leaf pieces of goshmem's host symmetric
// heap: the deterministic offset [Allocator] and the shared-memory [Region].
// Programs use it through shmem.Alloc and shmem.Array.
//
// # Heap model
//
// Every PE owns one region of GOSHMEM_SYMMETRIC_SIZE bytes, created by that
// PE with [CreateAnon] and mapped by every other PE of the node with
// [OpenHandle]. The region is a tmpfs file in /dev/shm that never has a
// name (O_TMPFILE): it is charged to /dev/shm like any shared-memory object,
// and the kernel frees it when the last process that maps it or holds its
// fd is gone, so a job killed at any point, Init included, leaves no file
// behind. Where O_TMPFILE is missing, the file is created under a unique
// name and unlinked before it is sized, so a name exists only between two
// system calls.
//
// A peer reaches the unnamed file through the owner's fd, as
// /proc/<pid>/fd/<fd> (a [RegionHandle], exchanged at Init), so the PEs of a
// node must be able to open each other's fds: the same user, the same PID
// namespace, /proc mounted without hidepid=, and no PE made non-dumpable
// (setuid, prctl PR_SET_DUMPABLE 0); the kernel checks ptrace read access,
// which Yama's ptrace_scope does not restrict. The owner keeps its fd open
// until every peer has mapped the region, then closes it
// ([Region.CloseHandle]); the mappings keep the memory. OpenHandle checks
// the file's device and inode against the handle, so a pid or fd reused
// after the owner died is refused, and an owner that has exited gives
// [ErrRegionNotFound] at once, naming the pid.
//
// The region is reserved sparsely: ftruncate sets its length but no page is
// committed until it is first touched, so a large GOSHMEM_SYMMETRIC_SIZE
// costs nothing until it is used. tmpfs files are not charged to the commit
// limit at mmap time, so MAP_NORESERVE is not needed (it only affects
// private mappings).
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
// Since any byte of the heaps may be touched, the committed total that the
// node's PEs can touch, the sum of their heap sizes, must fit in the free
// space of /dev/shm: [CheckCapacity] (or [CheckFree], given a free-space
// reading from [ShmFree]) checks that at Init, before any region is
// touched, and returns an error that matches errs.ErrHeapExhausted with the
// hint to lower GOSHMEM_SYMMETRIC_SIZE or enlarge /dev/shm. The check
// cannot see other jobs' untouched regions on the same node. [CreateAnon]
// also refuses a single region larger than the whole tmpfs.
//
// # Concurrency
//
// Allocator and Region methods are safe for concurrent use, but the
// allocator's determinism across PEs only holds if each PE issues the same
// sequence of calls, which the caller (the shmem runtime) guarantees by
// serializing collective allocation.
package symmetric
