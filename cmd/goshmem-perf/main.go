// Command goshmem-perf measures goshmem and compares it with its peers.
//
// It prints NVSHMEM-perftest-shaped tables (size, scope, latency us, BW GB/s),
// JSON lines for machines (--json; the same fields as bench/oshmem's
// oshbench, so rows of both join on name and size), and a PNG plot for
// people (--plot). Every comparison is a ratio against a peer measured in the
// same run on the same machine, so machine load moves both sides alike.
//
// Usage:
//
//	mpirun --oversubscribe -np 2 goshmem-perf [host] [flags]   measure the host API (shm transport)
//	goshmem-perf report [flags] GOSHMEM.jsonl [PEER.jsonl ...] ratio table and plot from saved rows
//	goshmem-perf merge RUN.jsonl ...                          one row per row name and size: the median over repeated runs
//	mpirun --bind-to none -np 2 goshmem-perf device [flags]   device-initiated RMA/signals/barriers from CUDA kernels (cuda transport)
//	goshmem-perf ibgda [flags]                                 IBGDA on one GPU: GPU-built mlx5 WQEs, NIC emulated (soft NIC)
//	mpirun -np 2 goshmem-perf cxi [-flavour cpu|gpu] [flags]   the CXI GPU-triggered path: phase benchmark, trigger, re-arm, barriers
//	mpirun -np 2 goshmem-perf proxy [flags]                    GPU-initiated, CPU-submitted: enqueue, put+completion, rate, loaded round trip
//
// Host mode runs under mpirun with 2 PEs: PE 0 measures, PE 1 is the target
// and the partner of the ping-pong rows. Started alone it is a 1-PE job that
// targets itself (handy for profiling; the ping-pong rows are skipped).
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"

	// the kernels of the on-stream rows and the host collectives on GPU arrays
	_ "github.com/goshmem/goshmem/gpulib"
)

// version is set by the build (bench/run.sh: -ldflags "-X main.version=...").
var version = ""

// modes are the subcommands; the first argument picks one, host is the
// default (so "goshmem-perf -json" is "goshmem-perf host -json").
var modes = map[string]func(args []string, stdout, stderr io.Writer) int{
	"host":   runHost,
	"report": runReport,
	"merge":  runMerge,
	"device": runDevice,
	"ibgda":  runIbgda,
	"cxi":    runCXI,
	"proxy":  runProxy,
}

func main() {
	os.Exit(dispatch(os.Args[1:], os.Stdout, os.Stderr))
}

func dispatch(args []string, stdout, stderr io.Writer) int {
	mode := "host"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		mode, args = args[0], args[1:]
	}
	if len(args) > 0 && (args[0] == "help") {
		mode = "help"
	}
	run, ok := modes[mode]
	if !ok {
		if mode != "help" {
			fmt.Fprintf(stderr, "goshmem-perf: unknown mode %q\n", mode)
		}
		usage(stderr)
		if mode == "help" {
			return 0
		}
		return 2
	}
	return run(args, stdout, stderr)
}

func usage(w io.Writer) {
	fmt.Fprint(w, `usage:
  mpirun --oversubscribe -np 2 goshmem-perf [host] [flags]   measure the host API (shm transport)
  goshmem-perf report [flags] GOSHMEM.jsonl [PEER.jsonl ...] ratio table and plot from saved rows
  mpirun --bind-to none -np 2 goshmem-perf device [flags]   device API from CUDA kernels (cuda transport; MPS when PEs share a GPU)
  goshmem-perf ibgda [flags]                                 IBGDA on one GPU: GPU-built mlx5 WQEs, NIC emulated (soft NIC)
  mpirun -np 2 goshmem-perf cxi [-flavour cpu|gpu] [flags]  the CXI GPU-triggered path (emulated trigger here): phases, trigger, re-arm, barriers
  mpirun -np 2 goshmem-perf proxy [flags]                    the GPU proxy path: enqueue, put+completion, message rate, loaded round trip
Run "goshmem-perf host -h", "goshmem-perf device -h" or "goshmem-perf report -h" for the flags.
`)
}

// versionString is the build's version: the -X flag, else the module
// version and VCS revision the Go toolchain recorded, else "devel".
func versionString() string {
	if version != "" {
		return version
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "devel"
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	if rev != "" {
		v += " (commit " + rev + dirty + ")"
	}
	return v
}
