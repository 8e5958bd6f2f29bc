// Package cxi holds the types a program uses with goshmem's Slingshot
// triggered path: GPU kernels release NIC work that the host pre-staged
// as libfabric deferred work, and a host monitor keeps that work flowing
// (docs/cxi.md).
//
// A program imports cxi to configure the path and to call it from host
// threads. It passes a Config to shmem.WithCXI at Init on every PE, then
// takes its Rank from shmem.CXI:
//
//	err := shmem.Init(shmem.WithCXI(cxi.Config{AM: true}))
//	...
//	rank, err := shmem.CXI()
//	err = rank.Barrier()
//
// Kernels use the same path through include/goshmem/cxi.h
// (goshmemx_cxi_barrier, _am_send, _am_poll). GOSHMEM_CXI_ENGINE and
// GOSHMEM_CXI_PROVIDER fill an empty Config.Engine and Config.Provider.
//
// The machinery (engines, monitor, shared layout) is in goshmem's
// internal/cxi package; Init and Finalize drive it.
package cxi
