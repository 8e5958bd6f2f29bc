package main

import (
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCXIFlags(t *testing.T) {
	o, err := parseCXIFlags([]string{"-flavour", "gpu"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, []int{1, 2, 5, 10, 20, 50, 100, 200}, o.phases)
	assert.Equal(t, int64(1_000_000), o.barriers, "gpu: 10^6 barriers back to back")
	assert.Equal(t, int64(5_000_000), o.work)
	o, err = parseCXIFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, int64(20_000), o.barriers, "cpu: fewer barriers (said in -h)")
	for _, bad := range [][]string{{"-flavour", "tpu"}, {"-phases", "2,5"}, {"-phases", "1,x"}, {"-phases", "1,0"}} {
		_, err := parseCXIFlags(bad, io.Discard)
		assert.Error(t, err, "%v", bad)
	}
}

// Rows keep Row's fields (joinable with the other modes' rows) and add the
// phase benchmark's; the emulation label travels with them.
func TestCXIRowJSONAndPlot(t *testing.T) {
	var rows []cxiRow
	for _, mode := range []string{"host-driven", "gpu-triggered"} {
		for i, n := range []int64{1, 10, 200} {
			r := cxiRow{Row: Row{Lib: "goshmem", Name: "cxi_phase", Size: n, Iters: 3, MedianUS: 1000 + float64(i)*100, Scope: mode},
				Flavour: "cpu", Slowdown: 1 + float64(i)/10}
			if n > 1 {
				r.PerCoordUS = 5
			}
			if mode == "gpu-triggered" {
				r.Emulation = emulationLabel
			}
			rows = append(rows, r)
		}
	}
	b, err := json.Marshal(rows[5])
	require.NoError(t, err)
	parsed, err := ParseRows(bytes.NewReader(b), "row")
	require.NoError(t, err)
	require.Len(t, parsed, 1)
	assert.Equal(t, "cxi_phase", parsed[0].Name)
	assert.Equal(t, int64(200), parsed[0].Size)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, emulationLabel, m["emulation"])
	assert.InDelta(t, 1.2, m["slowdown"], 1e-9)
	p := filepath.Join(t.TempDir(), "p.png")
	require.NoError(t, writeCXIPlot(p, rows, "test"))
	st, err := os.Stat(p)
	require.NoError(t, err)
	assert.Greater(t, st.Size(), int64(1000))
}
