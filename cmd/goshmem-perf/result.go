package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// Row is one measurement, in the JSON-lines format shared with
// bench/oshmem (oshbench, floor): lib, name, size, iters, median_us, p99_us,
// bw_gbs, and optional labels. Rows of different libraries join on
// (name, size).
type Row struct {
	Lib       string  `json:"lib"`
	Name      string  `json:"name"`
	Size      int64   `json:"size"`
	Iters     int64   `json:"iters"`
	MedianUS  float64 `json:"median_us"`
	P99US     float64 `json:"p99_us"`
	BWGBs     float64 `json:"bw_gbs"`
	Seg       string  `json:"seg,omitempty"`       // oshbench: heap or data
	Transport string  `json:"transport,omitempty"` // goshmem: shm, ...
	Scope     string  `json:"scope,omitempty"`     // goshmem: thread (host), warp, block
	Timing    string  `json:"timing,omitempty"`    // how samples were taken
	// Variant labels a non-default goshmem run (e.g. "pinned"), so it can be
	// shown beside the default one as its own series.
	Variant string `json:"variant,omitempty"`
	// Config describes the configuration of a row whose name alone does not
	// (ibgda mode: "thr=64 qps=64 sms=64 batch=16 excl", "qps=4").
	Config string `json:"config,omitempty"`
	// MMsgS is a message rate in millions of messages (WQEs) per second
	// (ibgda mode's rate rows).
	MMsgS float64 `json:"mmsg_s,omitempty"`
	// AllocsPerOp is Go heap allocations per operation on PE 0 (goshmem
	// only; hot paths should allocate nothing).
	AllocsPerOp *float64 `json:"allocs_per_op,omitempty"`
	// NPEs is the job's PE count (collective rows; 0: not recorded).
	NPEs int `json:"npes,omitempty"`
}

// Series names the source of a row: "goshmem", "openshmem/heap",
// "openshmem/data", "floor", "goshmem/<variant>".
func (r Row) Series() string {
	switch {
	case r.Seg != "":
		return r.Lib + "/" + r.Seg
	case r.Variant != "":
		return r.Lib + "/" + r.Variant
	}
	return r.Lib
}

// IsBandwidth reports whether the row is compared by bandwidth (higher is
// better) rather than by time (lower is better).
func (r Row) IsBandwidth() bool {
	return r.Name == "put_bw" || r.Name == "iput_bw" || r.Name == "iget_bw"
}

// round4 keeps JSON short: 0.1 ns resolution on microseconds.
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// MarshalLine is the row as one JSON line (no trailing newline).
func (r Row) MarshalLine() []byte {
	r.MedianUS, r.P99US, r.BWGBs, r.MMsgS = round4(r.MedianUS), round4(r.P99US), round4(r.BWGBs), round4(r.MMsgS)
	if r.AllocsPerOp != nil {
		v := round4(*r.AllocsPerOp)
		r.AllocsPerOp = &v
	}
	b, err := json.Marshal(r)
	if err != nil { // a Row always marshals; NaN would be a bug here
		panic(err)
	}
	return b
}

// ParseRows reads JSON lines. Blank lines and lines that do not start with
// '{' (headers such as "# OpenSHMEM ...", mpirun chatter) are skipped; a
// line that starts with '{' but is not a valid row is an error naming it.
func ParseRows(r io.Reader, name string) ([]Row, error) {
	var rows []Row
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1<<20)
	for ln := 1; sc.Scan(); ln++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var row Row
		if err := json.Unmarshal([]byte(line), &row); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, ln, err)
		}
		if row.Lib == "" || row.Name == "" {
			return nil, fmt.Errorf("%s:%d: row without lib or name: %s", name, ln, line)
		}
		rows = append(rows, row)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", name, err)
	}
	return rows, nil
}

// ReadRowsFile is ParseRows on a file.
func ReadRowsFile(path string) ([]Row, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ParseRows(f, path)
}
