package main

import (
	"slices"
)

// Summary is what a latency row reports: the median and the 99th
// percentile of the samples, in nanoseconds.
type Summary struct {
	N      int
	Median float64
	P99    float64
}

// Summarize sorts samples (ns) in place and returns their median and p99,
// computed exactly as bench/oshmem does so the two are comparable: the
// median of an even count is the mean of the two middle samples; p99 is the
// sample at index ceil(0.99 n) - 1 (the smallest sample that at least 99%
// of the samples do not exceed).
func Summarize(samples []int64) Summary {
	n := len(samples)
	if n == 0 {
		return Summary{}
	}
	slices.Sort(samples)
	var med float64
	if n%2 == 1 {
		med = float64(samples[n/2])
	} else {
		med = 0.5 * (float64(samples[n/2-1]) + float64(samples[n/2]))
	}
	return Summary{N: n, Median: med, P99: float64(samples[p99Index(n)])}
}

// p99Index is ceil(0.99 n) - 1 in integer arithmetic, clamped to [0, n).
func p99Index(n int) int {
	i := (99*n+99)/100 - 1
	return max(0, min(i, n-1))
}

// itersFor is the iteration count of a size-dependent latency row, as in
// bench/oshmem: the full count up to 32 KiB, then iters*32 KiB bytes per
// size, at least 100.
func itersFor(iters int, size int) int {
	if size < 65536 {
		return iters
	}
	n := int(float64(iters) * 32768.0 / float64(size))
	return max(min(n, iters), min(100, iters))
}

// sizes returns the powers of two from lo to hi inclusive (lo rounded up
// to a power of two, at least 1).
func sizes(lo, hi int) []int {
	s := 1
	for s < lo {
		s <<= 1
	}
	var out []int
	for ; s <= hi; s <<= 1 {
		out = append(out, s)
	}
	return out
}
