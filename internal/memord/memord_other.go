//go:build (!amd64 && !arm64) || race

package memord

import "sync/atomic"

var fenceWord atomic.Uint64

// StoreRelease64 falls back to a sequentially consistent store.
func StoreRelease64(p *uint64, v uint64) { atomic.StoreUint64(p, v) }

// StoreRelease32 falls back to a sequentially consistent store.
func StoreRelease32(p *uint32, v uint32) { atomic.StoreUint32(p, v) }

// StoreStoreFence falls back to a full barrier.
func StoreStoreFence() { fenceWord.Add(1) }
