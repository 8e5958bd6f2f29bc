// Package quiet names goshmem's completion model; a program never imports
// it. Its calls are in package shmem:
//
//   - shmem.Quiet waits until every operation this PE issued before the
//     call has completed, on every context and queue (PE-wide scope).
//   - (*shmem.Ctx).Quiet does the same for that context's queues only.
//   - shmem.Fence and (*shmem.Ctx).Fence order the puts, AMOs and signals
//     to each PE issued before them ahead of those issued after.
//   - shmem.QuietOnStream enqueues on a CUDA stream the completion of
//     what this PE's GPU issued.
//
// A failure a transport learns of later (a failed completion) is returned
// once, by the next Quiet of a scope that holds the queue.
// GOSHMEM_TIMEOUT bounds each wait. The issued/completed counting lives in
// goshmem's internal/quiet package (Ref: OpenSHMEM 1.6 §9.8).
package quiet
