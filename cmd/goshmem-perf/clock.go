package main

import (
	_ "unsafe" // go:linkname
)

// nanotime is the Go runtime's monotonic clock (the same vDSO
// clock_gettime(CLOCK_MONOTONIC) that time.Now uses for its monotonic
// reading, without the wall-clock read and the time.Time construction).
// bench/oshmem times with clock_gettime(CLOCK_MONOTONIC) too, so both sides
// pay the same timer cost inside every sample.
//
//go:linkname nanotime runtime.nanotime
func nanotime() int64

// timerOverhead is the median of back-to-back samples of an empty
// operation through the same harness the benchmarks use (timer pair plus
// one indirect call): the floor under every per-iteration sample.
func timerOverhead(n int) Summary {
	s := make([]int64, n)
	op := func() error { return nil }
	for i := range s {
		t0 := nanotime()
		_ = op()
		s[i] = nanotime() - t0
	}
	return Summarize(s)
}
