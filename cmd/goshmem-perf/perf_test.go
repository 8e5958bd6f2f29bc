package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSummarize(t *testing.T) {
	seq := func(n int) []int64 { // n..1, unsorted on purpose
		s := make([]int64, n)
		for i := range s {
			s[i] = int64(n - i)
		}
		return s
	}
	tests := []struct {
		name      string
		in        []int64
		med, p99  float64
		wantCount int
	}{
		{"empty", nil, 0, 0, 0},
		{"one", []int64{7}, 7, 7, 1},
		{"odd", []int64{5, 1, 3}, 3, 5, 3},
		{"even: mean of the middle two", []int64{4, 1, 3, 2}, 2.5, 4, 4},
		{"100: p99 is the 99th smallest", seq(100), 50.5, 99, 100},
		{"101: ceil(99.99)-1 = index 99", seq(101), 51, 100, 101},
		{"10000", seq(10000), 5000.5, 9900, 10000},
		{"outlier moves p99, not median", append(seq(99), 1_000_000), 50.5, 99, 100},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := Summarize(tc.in)
			assert.Equal(t, tc.wantCount, s.N)
			assert.InDelta(t, tc.med, s.Median, 1e-9)
			assert.InDelta(t, tc.p99, s.P99, 1e-9)
		})
	}
}

func TestP99IndexMatchesOshbench(t *testing.T) {
	// oshbench: i99 = (long)(n*0.99 + 0.999999) - 1
	for _, n := range []int{1, 2, 10, 99, 100, 101, 781, 3125, 10000, 100000} {
		want := int(float64(n)*0.99+0.999999) - 1
		assert.Equal(t, want, p99Index(n), "n=%d", n)
	}
}

func TestItersForMatchesOshbench(t *testing.T) {
	tests := []struct{ iters, size, want int }{
		{100000, 8, 100000},
		{100000, 32768, 100000},
		{100000, 65536, 50000},
		{100000, 1 << 20, 3125},
		{100000, 4 << 20, 781},
		{10000, 4 << 20, 100}, // floor of 100
		{50, 4 << 20, 50},     // never more than iters
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, itersFor(tc.iters, tc.size), "iters=%d size=%d", tc.iters, tc.size)
	}
}

func TestSizes(t *testing.T) {
	assert.Equal(t, []int{8, 16, 32, 64}, sizes(8, 64))
	assert.Equal(t, []int{4096, 8192}, sizes(3000, 8192))
	assert.Empty(t, sizes(128, 64))
}

const sample = `# OpenSHMEM (oshmem 4.1.4, spec 1.4), 2 PEs, iters=100000
{"lib":"openshmem","name":"put_lat","size":8,"iters":100000,"median_us":1.262,"p99_us":2.095,"bw_gbs":0.006,"seg":"data","timing":"per-iter"}

{"lib":"openshmem","name":"pingpong_p","size":8,"iters":100000,"median_us":1.793,"p99_us":2.204,"bw_gbs":0.000,"seg":"data","timing":"per-iter round trip"}
{"lib":"openshmem","name":"barrier","size":0,"iters":10000,"median_us":0.481,"p99_us":0.812,"bw_gbs":0.000,"seg":"data","timing":"per-iter, PE0"}
{"lib":"openshmem","name":"put_bw","size":1048576,"iters":10,"median_us":7609.851,"p99_us":9440.981,"bw_gbs":8.819,"seg":"data","timing":"per-window W=64 (us per window)"}
{"lib":"floor","name":"put_lat","size":8,"iters":200000,"median_us":0.030,"p99_us":0.031,"bw_gbs":0,"timing":"per-iter, 8 B memcpy + seq_cst fence, timer included"}
{"lib":"floor","name":"pingpong_p","size":8,"iters":200000,"median_us":0.441,"p99_us":0.561,"bw_gbs":0,"timing":"per-iter round trip, one cache line"}
`

func TestParseRows(t *testing.T) {
	rows, err := ParseRows(strings.NewReader(sample), "sample")
	require.NoError(t, err)
	require.Len(t, rows, 6)
	assert.Equal(t, Row{Lib: "openshmem", Name: "put_lat", Size: 8, Iters: 100000, MedianUS: 1.262, P99US: 2.095,
		BWGBs: 0.006, Seg: "data", Timing: "per-iter"}, rows[0])
	assert.Equal(t, "openshmem/data", rows[0].Series())
	assert.Equal(t, "floor", rows[4].Series())
	assert.True(t, rows[3].IsBandwidth())
	assert.InDelta(t, 8.819, rows[3].BWGBs, 1e-12)

	_, err = ParseRows(strings.NewReader("# header\n{\"lib\":\"x\",\"name\":\n"), "bad.jsonl")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad.jsonl:2")
	_, err = ParseRows(strings.NewReader(`{"name":"put_lat"}`), "nolib.jsonl")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "without lib")
}

func TestMarshalLineRoundTrip(t *testing.T) {
	a := 0.0
	r := Row{Lib: "goshmem", Name: "put_lat", Size: 8, Iters: 100000, MedianUS: 0.031234567, P99US: 0.04,
		BWGBs: 0.256, Transport: "shm", Scope: "thread", Timing: "per-iter", AllocsPerOp: &a}
	line := r.MarshalLine()
	assert.True(t, bytes.HasPrefix(line, []byte(`{"lib":"goshmem","name":"put_lat","size":8,"iters":100000,"median_us":0.0312,"p99_us":0.04,"bw_gbs":0.256,`)), string(line))
	assert.Contains(t, string(line), `"transport":"shm"`)
	assert.NotContains(t, string(line), `"seg"`)
	rows, err := ParseRows(bytes.NewReader(line), "x")
	require.NoError(t, err)
	require.Len(t, rows, 1)
	assert.InDelta(t, 0.0312, rows[0].MedianUS, 1e-12)
	assert.Equal(t, "goshmem", rows[0].Series())
}

func ours() []Row {
	return []Row{
		{Lib: "goshmem", Name: "put_lat", Size: 8, MedianUS: 0.06},
		{Lib: "goshmem", Name: "pingpong_p", Size: 8, MedianUS: 0.5},
		{Lib: "goshmem", Name: "barrier", Size: 0, MedianUS: 0.4},
		{Lib: "goshmem", Name: "put_bw", Size: 1 << 20, MedianUS: 7000, BWGBs: 9.0},
		{Lib: "goshmem", Name: "alloc_free", Size: 1 << 20, MedianUS: 20},
		{Lib: "goshmem", Name: "pingpong_putsignal", Size: 8, MedianUS: 0.6},
	}
}

func TestRatio(t *testing.T) {
	r, ok := Ratio(Row{Name: "put_lat", MedianUS: 0.5}, Row{Name: "put_lat", MedianUS: 2})
	require.True(t, ok)
	assert.InDelta(t, 0.25, r, 1e-12, "time ratio: < 1 means goshmem is faster")
	r, ok = Ratio(Row{Name: "put_bw", BWGBs: 9, MedianUS: 100}, Row{Name: "put_bw", BWGBs: 10, MedianUS: 50})
	require.True(t, ok)
	assert.InDelta(t, 0.9, r, 1e-12, "bandwidth ratio: > 1 means goshmem is faster")
	_, ok = Ratio(Row{Name: "put_lat", MedianUS: 0.5}, Row{Name: "put_lat"})
	assert.False(t, ok)
}

func TestEvalHeadlines(t *testing.T) {
	peer, err := ParseRows(strings.NewReader(sample), "sample")
	require.NoError(t, err)
	heap := []Row{{Lib: "openshmem", Seg: "heap", Name: "put_lat", Size: 8, MedianUS: 0.04}}
	d := NewDataset(ours(), heap, peer)
	assert.Equal(t, []string{"openshmem/heap", "openshmem/data", "floor"}, d.PeerOrder)

	got := map[string]HeadlineResult{}
	for _, r := range EvalHeadlines(d, Headlines) {
		got[r.Name+" "+r.Peer] = r
	}
	check := func(key string, ratio float64, verdict string) {
		t.Helper()
		r, ok := got[key]
		require.True(t, ok, key)
		assert.Equal(t, verdict, r.Verdict, key)
		if verdict != NA {
			assert.InDelta(t, ratio, r.Ratio, 1e-9, key)
		}
	}
	check("put_lat openshmem/heap", 1.5, Fail)        // 0.06 / 0.04 > 0.1
	check("put_lat openshmem/data", 0.06/1.262, Pass) // <= 0.1
	check("pingpong_p openshmem/data", 0.5/1.793, Pass)
	check("pingpong_p openshmem/heap", 0, NA) // no heap row
	check("pingpong_p floor", 0.5/0.441, Pass)
	check("barrier openshmem/data", 0.4/0.481, Fail) // 0.83 > 0.7
	check("put_bw openshmem/data", 9.0/8.819, Pass)  // >= 0.9
	check("alloc_free ", 20, Pass)                   // absolute 20 us <= 50

	var b bytes.Buffer
	WriteReport(&b, d, false)
	out := b.String()
	assert.Contains(t, out, "goshmem÷peer")
	assert.Contains(t, out, "openshmem/data")
	assert.Contains(t, out, "0.048x") // put_lat 8 vs data
	assert.Contains(t, out, "1.02x")  // put_bw vs data
	b.Reset()
	WriteReport(&b, d, true)
	assert.Contains(t, b.String(), "| headline | goshmem | peer |")
	assert.Contains(t, b.String(), "| ---: |")
}

func TestRatioGridMissingPeer(t *testing.T) {
	d := NewDataset(ours(), []Row{{Lib: "floor", Name: "pingpong_p", Size: 8, MedianUS: 0.44}})
	g := RatioGrid(d)
	require.Len(t, g.rows, len(ours()))
	assert.Equal(t, []string{"put_lat", "8", "0.060 us", "-", "-"}, g.rows[0])
	assert.Equal(t, []string{"pingpong_p", "8", "0.500 us", "0.440 us", "1.14x"}, g.rows[1])
	assert.Equal(t, []string{"put_bw", "1M", "9.00 GB/s", "-", "-"}, g.rows[3])
}

func TestWritePlot(t *testing.T) {
	peer, err := ParseRows(strings.NewReader(sample), "sample")
	require.NoError(t, err)
	rows := append(ours(), Row{Lib: "goshmem", Name: "put_lat", Size: 64, MedianUS: 0.07},
		Row{Lib: "goshmem", Name: "put_bw", Size: 4096, BWGBs: 50})
	path := filepath.Join(t.TempDir(), "p.png")
	require.NoError(t, WritePlot(path, NewDataset(rows, peer), "test"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")))
}

func TestDispatch(t *testing.T) {
	var out, errb bytes.Buffer
	assert.Equal(t, 2, dispatch([]string{"nosuch"}, &out, &errb))
	assert.Contains(t, errb.String(), `unknown mode "nosuch"`)
	errb.Reset()
	assert.Equal(t, 1, dispatch([]string{"proxy"}, &out, &errb))
	assert.Contains(t, errb.String(), "run with 2 PEs")
	errb.Reset()
	assert.Equal(t, 2, dispatch([]string{"ibgda", "-iters", "10000", "-warmup", "30000"}, &out, &errb))
	assert.Contains(t, errb.String(), "exceed the ring")
	errb.Reset()
	assert.Equal(t, 2, dispatch([]string{"host", "-timing", "sometimes"}, &out, &errb))
	assert.Contains(t, errb.String(), "want per-iter or batch")
}

// The ibgda mode's table and plot from saved rows (the GPU run itself is
// bench/ibgda/run.sh's).
func TestIbgdaTableAndPlot(t *testing.T) {
	var rows []Row
	for q := 1; q <= 4; q++ {
		rows = append(rows, Row{Lib: "goshmem", Name: "ibgda_put_quiet", Size: 8, Iters: 10, MedianUS: 12, P99US: 14,
			Scope: "ctx", Config: fmt.Sprintf("qps=%d", q)},
			Row{Lib: "goshmem", Name: "ibgda_put_quiet", Size: 8, Iters: 10, MedianUS: 12 + float64(q), P99US: 15 + float64(q),
				Scope: "pe", Config: fmt.Sprintf("qps=%d", q)})
	}
	rows = append(rows, Row{Lib: "goshmem", Name: "ibgda_rate", Size: 8, Iters: 32768, MMsgS: 21.5, Config: "thr=32 qps=1"})
	var buf bytes.Buffer
	tw := &ibgdaTable{w: &buf}
	for _, r := range rows {
		tw.Write(r)
	}
	assert.Contains(t, buf.String(), "# ibgda_put_quiet")
	assert.Contains(t, buf.String(), "21.50")
	path := filepath.Join(t.TempDir(), "q.png")
	require.NoError(t, writeQuietPlot(path, rows, "test"))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.True(t, bytes.HasPrefix(b, []byte("\x89PNG")))
}
