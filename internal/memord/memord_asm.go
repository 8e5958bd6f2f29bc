//go:build (amd64 || arm64) && !race

package memord

// StoreRelease64 stores v to *p, ordered after every earlier store of this
// thread (release), without a full barrier. *p must be 8-byte aligned.
//
//go:noescape
func StoreRelease64(p *uint64, v uint64)

// StoreRelease32 is StoreRelease64 for a 4-byte-aligned 32-bit word.
//
//go:noescape
func StoreRelease32(p *uint32, v uint32)

// StoreStoreFence orders this thread's earlier stores before its later
// stores (shmem_fence on load/store transports). On amd64 (TSO) stores are
// never reordered with each other, and Go's memmove ends its non-temporal
// loops with SFENCE, so only the compiler has to be stopped, which the
// assembly call does.
//
//go:noescape
func StoreStoreFence()
