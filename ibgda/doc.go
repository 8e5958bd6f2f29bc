// Package ibgda names goshmem's IBGDA path, where GPU threads build mlx5
// work requests and ring the NIC's doorbell themselves; a program never
// imports it. Kernels use it through the device API (include/goshmem.h)
// once Init selected it:
//
//   - GOSHMEM_GPU_TRANSPORT=ibgda turns it on.
//   - GOSHMEM_IBGDA_NIC picks mlx5 (a ConnectX NIC) or soft (an emulated
//     NIC for machines without one); GOSHMEM_IBGDA_DEVICE,
//     GOSHMEM_IBGDA_GID_INDEX, GOSHMEM_IBGDA_DOORBELL and
//     GOSHMEM_IBGDA_QUEUES tune it.
//
// docs/ibgda.md describes the path. The host side (WQE and CQE formats, the
// soft NIC, queue setup) lives in goshmem's internal/ibgda package.
package ibgda
