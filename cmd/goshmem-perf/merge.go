package main

import (
	"bufio"
	"fmt"
	"io"
	"slices"
)

// runMerge is "goshmem-perf merge": it reads the JSON lines of repeated
// runs of one benchmark and prints one row per (series, name, size,
// scope): the median over the runs of each run's median and p99 (and
// bandwidth), iterations summed, "median of N runs" added to its timing.
// Interleaving the runs of goshmem and a peer and merging each side
// smooths out load that other work on the machine puts on one run.
func runMerge(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" {
		fmt.Fprintln(stderr, "usage: goshmem-perf merge RUN.jsonl [RUN.jsonl ...] > MERGED.jsonl")
		return 2
	}
	var all []Row
	for _, p := range args {
		rows, err := ReadRowsFile(p)
		if err != nil {
			fmt.Fprintln(stderr, "goshmem-perf merge:", err)
			return 1
		}
		all = append(all, rows...)
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	for _, r := range MergeRows(all) {
		w.Write(r.MarshalLine())
		w.WriteByte('\n')
	}
	return 0
}

// MergeRows merges repeated rows as runMerge describes, in the order each
// key first appears.
func MergeRows(rows []Row) []Row {
	type key struct {
		series, name, scope string
		size                int64
	}
	groups := map[key][]Row{}
	var order []key
	for _, r := range rows {
		k := key{r.Series(), r.Name, r.Scope, r.Size}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	}
	out := make([]Row, 0, len(order))
	for _, k := range order {
		g := groups[k]
		m := g[0]
		if len(g) > 1 {
			col := func(f func(Row) float64) float64 {
				v := make([]float64, len(g))
				for i, r := range g {
					v[i] = f(r)
				}
				return medianOf(v)
			}
			m.MedianUS = col(func(r Row) float64 { return r.MedianUS })
			m.P99US = col(func(r Row) float64 { return r.P99US })
			m.BWGBs = col(func(r Row) float64 { return r.BWGBs })
			m.Iters = 0
			for _, r := range g {
				m.Iters += r.Iters
			}
			m.Timing = fmt.Sprintf("%s, median of %d runs", m.Timing, len(g))
		}
		out = append(out, m)
	}
	return out
}

// medianOf is the median of v (the mean of the middle two for an even
// count), v reordered.
func medianOf(v []float64) float64 {
	slices.Sort(v)
	n := len(v)
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
