// Package symmetric names goshmem's symmetric heap; a program never
// imports it. Its calls are in package shmem:
//
//   - shmem.Alloc and shmem.AllocDevice allocate a symmetric array on the
//     host or GPU heap of every PE (collective: same order, same sizes).
//   - shmem.Array's Free releases it, Local gives this PE's part.
//   - shmem.WithSymmetricSize (or GOSHMEM_SYMMETRIC_SIZE) sizes the host
//     heap, GOSHMEM_DEVICE_HEAP_SIZE the GPU heap.
//
// Every PE's host heap is one shared-memory region; an object has the same
// offset in every PE's region, so its address on PE p is the base of p's
// region plus that offset. Init checks that the node's heaps fit in
// /dev/shm. The allocator and the regions live in goshmem's
// internal/symmetric package.
package symmetric
