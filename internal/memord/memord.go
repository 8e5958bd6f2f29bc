// Package memord holds the memory-ordering primitives goshmem's host data
// path needs that sync/atomic does not offer, each named for its purpose.
//
// sync/atomic's stores are sequentially consistent (XCHG on amd64): a full
// barrier that costs a store-buffer drain on every P and signal. OpenSHMEM
// needs less there: a single-copy-atomic store that is ordered after the
// stores before it (a release store), so a peer that sees the flag sees the
// data. That is a plain MOV on amd64 (TSO keeps store order) and STLR on
// arm64; both are provided in assembly so the Go compiler cannot reorder or
// elide them (an assembly call is opaque to it).
//
// Under the race detector (-race) the sync/atomic versions are used
// (memord_other.go): the detector does not see assembly stores, so it would
// miss the release edge and report the data they publish as racy.
package memord
