// Package collectives defines the reduction operators of goshmem's team
// collectives. A program rarely imports it: shmem re-exports the type and
// its values as shmem.Op and shmem.OpSum ... shmem.OpXor, which
// shmem.Reduce and its variants take.
//
// The collectives themselves are shmem calls: BarrierAll, SyncAll,
// Broadcast, Reduce, FCollect, Collect, AllToAll, the scans, and the team
// calls (TeamSplitStrided, TeamSplit2D). Their machinery (the algorithms,
// psync words and scratch buffers in the symmetric heap) is in goshmem's
// internal/collectives package. Device collectives are in
// include/goshmem/coll.h.
package collectives
