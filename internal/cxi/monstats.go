package cxi

import (
	"bytes"
	"fmt"
	"math"
	"math/bits"
	"os"
	"runtime/metrics"
	"strconv"
	"time"
)

// What may stop the monitor thread besides its own work: the Go GC (its
// stop-the-world pauses) and the OS (involuntary context switches).

// gcSample is a reading of the Go runtime's GC metrics.
type gcSample struct {
	cycles  uint64
	pauses  []uint64  // stop-the-world GC pause histogram counts
	buckets []float64 // its bucket boundaries (seconds)
}

var gcMetrics = []string{"/gc/cycles/total:gc-cycles", "/sched/pauses/total/gc:seconds"}

func readGC() gcSample {
	s := make([]metrics.Sample, len(gcMetrics))
	for i, n := range gcMetrics {
		s[i].Name = n
	}
	metrics.Read(s)
	var g gcSample
	if s[0].Value.Kind() == metrics.KindUint64 {
		g.cycles = s[0].Value.Uint64()
	}
	if s[1].Value.Kind() == metrics.KindFloat64Histogram {
		h := s[1].Value.Float64Histogram()
		g.pauses = append([]uint64(nil), h.Counts...)
		g.buckets = h.Buckets
	}
	return g
}

// maxPauseSince is the upper bound of the highest GC pause bucket that
// gained a count since g0 (0: no pause).
func (g gcSample) maxPauseSince(g0 gcSample) time.Duration {
	for i := len(g.pauses) - 1; i >= 0; i-- {
		var before uint64
		if i < len(g0.pauses) {
			before = g0.pauses[i]
		}
		if g.pauses[i] > before {
			hi := g.buckets[i+1]
			if math.IsInf(hi, 1) {
				hi = g.buckets[i]
			}
			return time.Duration(hi * 1e9)
		}
	}
	return 0
}

// ctxSw is the voluntary and involuntary context switches of thread tid
// of this process (Linux /proc; -1, -1 where unavailable). A spinning
// monitor switches voluntarily only when it blocks (a provider lock, the
// Go runtime parking it, or its idle nanosleep), involuntarily when the OS
// gives its CPU to another thread.
func ctxSw(tid int64) (vol, invol int64) {
	vol, invol = -1, -1
	if tid <= 0 {
		return
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/self/task/%d/status", tid))
	if err != nil {
		return
	}
	field := func(key string) int64 {
		i := bytes.Index(b, []byte("\n"+key))
		if i < 0 {
			return -1
		}
		line := b[i+1+len(key):]
		if j := bytes.IndexByte(line, '\n'); j >= 0 {
			line = line[:j]
		}
		n, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 10, 64)
		if err != nil {
			return -1
		}
		return n
	}
	return field("voluntary_ctxt_switches:"), field("nonvoluntary_ctxt_switches:")
}

// logHist is a log histogram with 8 buckets per power of two (~9% wide),
// for medians that the preemptions of a loaded machine do not move.
type logHist [512]uint32

func (h *logHist) add(ns int64) {
	if ns < 0 {
		ns = 0
	}
	b := int(ns)
	if ns >= 8 {
		l := bits.Len64(uint64(ns)) - 1
		b = (l-2)*8 + int((uint64(ns)>>(l-3))&7)
	}
	h[min(b, len(h)-1)]++
}

// median is the middle of the bucket holding the median (0: empty).
func (h *logHist) median() time.Duration {
	var total, seen uint64
	for _, n := range h {
		total += uint64(n)
	}
	for b, n := range h {
		seen += uint64(n)
		if n > 0 && 2*seen >= total {
			if b < 8 {
				return time.Duration(b)
			}
			l, m := b/8+2, b%8
			lo, w := int64(8+m)<<(l-3), int64(1)<<(l-3)
			return time.Duration(lo + w/2)
		}
	}
	return 0
}
