package proxy

import (
	"sync/atomic"
)

// Test access to a ring's counters (host mode: HostMemory, so both words
// have host addresses).

// TailWord is ring i's host-resident consumer index (ring->tail).
func (p *Proxy) TailWord(i int) uint64 { return atomic.LoadUint64((*uint64)(p.rings[i].tail.Host)) }

// DoneWord is ring i's completion counter (ring->done).
func (p *Proxy) DoneWord(i int) uint64 { return atomic.LoadUint64((*uint64)(p.rings[i].done.Host)) }

// NumRings is how many rings the proxy has.
func (p *Proxy) NumRings() int { return len(p.rings) }

// RingOf reports ring i's context and worker.
func (p *Proxy) RingOf(i int) (ctx, worker int) { return p.rings[i].ctx, p.rings[i].worker }

// Served is the requests the workers served (after Close).
func (p *Proxy) Served() (reqs, chains uint64) {
	for _, w := range p.workers {
		reqs += w.reqs
		chains += w.chains
	}
	return reqs, chains
}
