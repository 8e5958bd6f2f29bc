package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCollItersForMatchesOshbench(t *testing.T) {
	// oshbench coll_iters_for: iters up to 4 KiB, then iters*4096/size,
	// clamped to [100, iters].
	for _, tc := range []struct{ iters, size, want int }{
		{2000, 8, 2000}, {2000, 1024, 2000}, {2000, 4096, 2000},
		{2000, 65536, 125}, {2000, 1 << 20, 100}, {50, 1 << 20, 50}, {100000, 65536, 6250},
	} {
		assert.Equal(t, tc.want, collItersFor(tc.iters, tc.size), "%+v", tc)
	}
}

func TestMergeRows(t *testing.T) {
	rows := []Row{
		{Lib: "goshmem", Name: "bcast", Size: 8, Iters: 10, MedianUS: 3, P99US: 9, Timing: "per-iter"},
		{Lib: "openshmem", Seg: "heap", Name: "bcast", Size: 8, Iters: 10, MedianUS: 5},
		{Lib: "goshmem", Name: "bcast", Size: 8, Iters: 10, MedianUS: 1, P99US: 7, Timing: "per-iter"},
		{Lib: "goshmem", Name: "bcast", Size: 1024, Iters: 10, MedianUS: 4},
		{Lib: "goshmem", Name: "bcast", Size: 8, Iters: 10, MedianUS: 2, P99US: 8, Timing: "per-iter"},
		{Lib: "goshmem", Name: "bcast", Size: 8, Iters: 10, MedianUS: 10, P99US: 1, Timing: "per-iter", Variant: "x"},
	}
	m := MergeRows(rows)
	require.Len(t, m, 4, "one row per series, name and size, in first-seen order")
	assert.Equal(t, Row{Lib: "goshmem", Name: "bcast", Size: 8, Iters: 30, MedianUS: 2, P99US: 8,
		Timing: "per-iter, median of 3 runs"}, m[0])
	assert.Equal(t, "openshmem/heap", m[1].Series())
	assert.Equal(t, 5.0, m[1].MedianUS, "a single row stays as it is")
	assert.Equal(t, int64(1024), m[2].Size)
	assert.Equal(t, "goshmem/x", m[3].Series())
	assert.Equal(t, 2.5, medianOf([]float64{4, 1, 3, 2}))
}

func TestCollHeadlines(t *testing.T) {
	two := CollHeadlines(2)
	assert.Equal(t, "reduce_sum_int64", two[0].Name)
	assert.Equal(t, 0.6, two[0].Target)
	assert.Equal(t, int64(1<<20), two[2].Size)
	assert.Equal(t, "alltoall", two[2].Name)
	eight := CollHeadlines(8)
	assert.Len(t, eight, len(two)-3, "the 0.6x targets are for 2 PEs only")
	for _, h := range eight {
		assert.Equal(t, 1.0, h.Target, h.Label)
		assert.True(t, h.Max)
	}
	ours := []Row{{Lib: "goshmem", Name: "bcast", Size: 8, MedianUS: 2, NPEs: 4}}
	peer := []Row{{Lib: "openshmem", Seg: "heap", Name: "bcast", Size: 8, MedianUS: 4, NPEs: 4}}
	d := NewDataset(ours, peer)
	assert.Len(t, headlinesFor(d), len(eight), "collective rows get the collective targets")
	var b bytes.Buffer
	WriteReport(&b, d, false)
	assert.Regexp(t, `bcast 8 +2\.000 us +openshmem/heap +4\.000 us +0\.50x +≤ 1x +PASS`, b.String())
	assert.True(t, strings.Contains(b.String(), "bcast 1K"), "every size is listed, n/a without rows")
}
