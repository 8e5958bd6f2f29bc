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

func TestNCCLHeadlines(t *testing.T) {
	ours := []Row{
		{Lib: "goshmem", Name: "sum_reduce_on_stream", Size: 32 << 20, MedianUS: 100, BWGBs: 335, Transport: "cuda", Scope: "-"},
		{Lib: "goshmem", Name: "sum_reduce_on_stream", Size: 64 << 20, MedianUS: 200, BWGBs: 335, Transport: "cuda", Scope: "-"},
		{Lib: "goshmem", Name: "sum_reduce_on_stream", Size: 256 << 20, MedianUS: 1000, BWGBs: 268, Transport: "cuda", Scope: "-"},
	}
	nv := []Row{{Lib: "nvshmem", Name: "sum_reduce_on_stream", Size: 64 << 20, MedianUS: 300, BWGBs: 224, Transport: "cuda"}}
	assert.Empty(t, ncclHeadlines(NewDataset(ours, nv)), "no NCCL rows, no NCCL target")
	nccl := []Row{
		{Lib: "nccl", Name: "sum_reduce_on_stream", Size: 64 << 20, MedianUS: 190, BWGBs: 353, Transport: "cuda", Scope: "-"},
		{Lib: "nccl", Name: "sum_reduce_on_stream", Size: 256 << 20, MedianUS: 700, BWGBs: 383, Transport: "cuda", Scope: "-"},
	}
	d := NewDataset(ours, nv, nccl)
	hs := ncclHeadlines(d)
	require.Len(t, hs, 2, "64 MiB and every larger size goshmem ran")
	assert.Equal(t, int64(64<<20), hs[0].Size)
	assert.True(t, hs[0].BW)
	got := map[int64]HeadlineResult{}
	for _, r := range EvalHeadlines(d, headlinesFor(d)) {
		if r.PeerLib == "nccl" {
			got[r.Size] = r
		}
	}
	require.Len(t, got, 2)
	assert.InDelta(t, 335.0/353, got[64<<20].Ratio, 1e-9, "bandwidth ratio, though the row is a time row")
	assert.Equal(t, Pass, got[64<<20].Verdict, "0.95x >= 0.9x")
	assert.InDelta(t, 268.0/383, got[256<<20].Ratio, 1e-9)
	assert.Equal(t, Fail, got[256<<20].Verdict, "0.70x < 0.9x")
	var b bytes.Buffer
	WriteReport(&b, d, false)
	assert.Regexp(t, `float sum-reduce on stream 64 MiB vs all_reduce \(bus bandwidth\) +335\.00 GB/s +nccl +353\.00 GB/s +0\.95x +≥ 0\.9x +PASS`, b.String())
	assert.Contains(t, b.String(), "nccl: NCCL")
}

func TestLauncherSize(t *testing.T) {
	for _, v := range []string{"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "GOSHMEM_NPES", "WORLD_SIZE", "SLURM_NTASKS"} {
		t.Setenv(v, "")
	}
	assert.Equal(t, 8, launcherSize(), "unknown: 8")
	t.Setenv("WORLD_SIZE", "3")
	assert.Equal(t, 3, launcherSize())
	t.Setenv("OMPI_COMM_WORLD_SIZE", "5")
	assert.Equal(t, 5, launcherSize(), "mpirun's count first")
}
