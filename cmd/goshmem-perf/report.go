package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"os"
)

// runReport is "goshmem-perf report": it reads saved JSON lines (goshmem's
// first, then any peers') and prints the headline and ratio tables, writes
// them as Markdown (-md) and draws the plot (-plot).
func runReport(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	plotPath := fs.String("plot", "", "write the plot (PNG) to `file`")
	mdPath := fs.String("md", "", "also write the report as Markdown to `file`")
	table := fs.Bool("table", false, "also print every input row as perftest tables")
	title := fs.String("title", "", "subtitle for the plot and the Markdown report")
	headlines := fs.Bool("headlines", true, "print the headline targets table")
	matched := fs.Bool("matched", false, "in the ratio table, only rows that some peer also has")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "usage: goshmem-perf report [flags] GOSHMEM.jsonl [PEER.jsonl ...]\n"+
			"Rows of the first file are goshmem's; rows of the others are peers, named by lib and seg\n"+
			"(openshmem/heap, openshmem/data, floor). Ratios are goshmem ÷ peer.\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() < 1 {
		fs.Usage()
		return 2
	}
	ours, err := ReadRowsFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintln(stderr, "goshmem-perf report:", err)
		return 1
	}
	var peers [][]Row
	for _, p := range fs.Args()[1:] {
		rows, err := ReadRowsFile(p)
		if err != nil {
			fmt.Fprintln(stderr, "goshmem-perf report:", err)
			return 1
		}
		peers = append(peers, rows)
	}
	d := NewDataset(ours, peers...)
	if *table {
		tw := NewTableWriter(stdout)
		for _, r := range ours {
			tw.Write(r)
		}
		for _, s := range d.PeerOrder {
			for _, r := range d.Peers[s] {
				tw.Write(r)
			}
		}
	}
	d.NoHeadlines, d.MatchedOnly = !*headlines, *matched
	if err := writeOutputs(stdout, d, *mdPath, *plotPath, *title); err != nil {
		fmt.Fprintln(stderr, "goshmem-perf report:", err)
		return 1
	}
	return 0
}

// writeOutputs prints the text report (when there are peers or headlines
// to show) and writes the Markdown and PNG files if asked.
func writeOutputs(out io.Writer, d Dataset, mdPath, plotPath, title string) error {
	WriteReport(out, d, false)
	if mdPath != "" {
		var b bytes.Buffer
		if title != "" {
			fmt.Fprintf(&b, "# goshmem-perf ratios\n\n%s\n", title)
		}
		WriteReport(&b, d, true)
		if err := os.WriteFile(mdPath, b.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if plotPath != "" {
		if err := WritePlot(plotPath, d, title); err != nil {
			return err
		}
	}
	return nil
}
