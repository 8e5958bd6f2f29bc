package main

import (
	"fmt"
	"os"

	"github.com/goshmem/goshmem/shmem"
)

// Device collective rows: bench/gpu/coll.cuh compiled against goshmem
// (bench/gpu/perf_coll.cu -> -coll-module), the same kernels
// bench/gpu/nvshmem_perf.cu runs against NVSHMEM. NVSHMEM perftest shape
// (perftest/device/coll/*_latency.cu): one block per PE calls the
// collective iters times in one kernel; thread scope below 512 elements,
// warp below 4096, block up to -coll-maxsize. Timing: %globaltimer on
// thread 0 after a block-scope team barrier and after the last call
// (coll.cuh); latency = time / iters, bandwidth = size / latency, where
// size is the collective's element count times the element size.

type collRowDef struct {
	name      string
	esz       int
	timesNPEs bool // dst (alltoall: src too) hold n * npes elements
}

// collRowDefs: coll.cuh's PC_FOR_ROWS.
var collRowDefs = []collRowDef{
	{"reduce_sum_float", 4, false},
	{"reduce_sum_int64", 8, false},
	{"broadcast", 8, false},
	{"fcollect", 8, true},
	{"alltoall", 8, true},
	{"reducescatter_sum_float", 4, true},
}

// collIters: -coll-iters up to 1 MiB, then scaled down by size, at least
// 10 (as nvshmem_perf's pc_iters).
func collIters(iters, size int) int {
	if size <= 1<<20 {
		return iters
	}
	return max(10, int(int64(iters)*(1<<20)/int64(size)))
}

// collWarm: -coll-warmup up to 1 MiB, then at most 2.
func collWarm(warm, size int) int {
	if size <= 1<<20 {
		return warm
	}
	return min(warm, 2)
}

func (d *dev) collRows() error {
	if d.o.collModule == "" {
		return nil
	}
	if _, err := os.Stat(d.o.collModule); err != nil {
		if d.me == 0 {
			fmt.Fprintf(os.Stderr, "# coll rows skipped: %v (make gpu builds bin/gpu/perf_coll.fatbin)\n", err)
		}
		return nil
	}
	mod, err := shmem.LoadModuleFile(d.o.collModule)
	if err != nil {
		return err
	}
	world := int32(shmem.TeamWorld.DeviceID())
	bufN := max(d.o.bwMax, d.o.maxSize, d.o.maxSizeThread)
	var meta [2]uint64
	refused := map[string]bool{}
	for _, r := range collRowDefs {
		for sc, scope := range []string{"thread", "warp", "block"} {
			k, err := mod.Kernel("pc_" + r.name + "_" + scope)
			if err != nil {
				return err
			}
			top := d.o.collMax
			if r.timesNPEs {
				top = min(top, bufN/d.npes)
			}
			top = min(top, bufN)
			for size := 8; size <= top; size *= 2 {
				n := size / r.esz
				if (sc == 0 && n >= 512) || (sc == 1 && n >= 4096) {
					break
				}
				it, w := collIters(d.o.collIters, size), collWarm(d.o.collWarmup, size)
				if err := shmem.BarrierAll(); err != nil {
					return err
				}
				// A kernel above 64 registers cannot launch 1024 threads:
				// halve the block (the row's timing names the size used;
				// the first refusal of each kernel is printed).
				threads := d.o.collThreads
				var err error
				for {
					cfg := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(uint32(threads))}
					err = shmem.LaunchCollective(k, cfg, world, d.dbuf.DevicePtr(), d.sbuf.DevicePtr(), uint64(n), int32(0),
						int32(it), int32(w), d.meta)
					if err == nil || threads <= 32 {
						break
					}
					if d.me == 0 && !refused[k.Name()] {
						refused[k.Name()] = true
						fmt.Fprintf(os.Stderr, "goshmem-perf: %v; halving the block\n", err)
					}
					threads /= 2
				}
				if err != nil {
					return fmt.Errorf("%s/%s %d B: %w", r.name, scope, size, err)
				}
				if err := shmem.Synchronize(); err != nil {
					return fmt.Errorf("%s/%s %d B: %w", r.name, scope, size, err)
				}
				if d.me == 0 {
					if err := shmem.Get(meta[:], d.meta, 0, d.me); err != nil {
						return err
					}
					per := float64(meta[1]-meta[0]) / float64(it) // ns per call
					bw := 0.0
					if per > 0 {
						bw = float64(size) / per
					}
					d.emit(Row{Name: r.name, Size: int64(size), Iters: int64(it), MedianUS: per / 1000, P99US: per / 1000,
						BWGBs: bw, Scope: scope, NPEs: d.npes,
						Timing: fmt.Sprintf("globaltimer around %d calls in one kernel (after %d + a block barrier), 1 block x %d threads", it, w, threads)})
				}
				if err := shmem.BarrierAll(); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// devCollHeadlines are the collective targets against NVSHMEM in
// the same run: at most 0.8x its latency below 64 KiB, at least its
// bandwidth (at most 1.0x its time) above 1 MiB; the on-stream barrier and
// sum-reduce likewise.
func devCollHeadlines() []Headline {
	var hs []Headline
	for _, r := range collRowDefs {
		for _, sc := range []string{"thread", "warp", "block"} {
			hs = append(hs, Headline{Label: fmt.Sprintf("device %s 8 B (%s)", r.name, sc), Name: r.name, Size: 8, Scope: sc,
				PeerLib: "nvshmem", Max: true, Target: 0.8})
		}
		hs = append(hs, Headline{Label: fmt.Sprintf("device %s 16 KiB (block)", r.name), Name: r.name, Size: 16 << 10, Scope: "block",
			PeerLib: "nvshmem", Max: true, Target: 0.8})
		for _, size := range []int64{4 << 20, 64 << 20} {
			hs = append(hs, Headline{Label: fmt.Sprintf("device %s %s (block, time: <= 1.0x = bandwidth >= 1.0x)", r.name, fmtSize(size)),
				Name: r.name, Size: size, Scope: "block", PeerLib: "nvshmem", Max: true, Target: 1.0})
		}
	}
	hs = append(hs,
		Headline{Label: "barrier_all on stream", Name: "barrier_on_stream", Size: 0, PeerLib: "nvshmem", Max: true, Target: 0.8},
		Headline{Label: "float sum-reduce on stream 8 B", Name: "sum_reduce_on_stream", Size: 8, PeerLib: "nvshmem", Max: true, Target: 0.8},
		Headline{Label: "float sum-reduce on stream 16 KiB", Name: "sum_reduce_on_stream", Size: 16 << 10, PeerLib: "nvshmem", Max: true, Target: 0.8},
		Headline{Label: "float sum-reduce on stream 64 MiB (time)", Name: "sum_reduce_on_stream", Size: 64 << 20, PeerLib: "nvshmem", Max: true, Target: 1.0},
	)
	return hs
}

// ncclHeadlines are the two-GPU target against NCCL, when the dataset has
// NCCL's rows: the on-stream float sum-reduce (all-reduce) of 64 MiB and
// every larger size goshmem ran, at least 0.9x NCCL's bus bandwidth (for
// equal sizes and PE counts the bus bandwidths stand in the ratio of the
// algorithm bandwidths, bw_gbs).
func ncclHeadlines(d Dataset) []Headline {
	have := false
	for _, s := range d.PeerOrder {
		if rows := d.Peers[s]; len(rows) > 0 && rows[0].Lib == "nccl" {
			have = true
		}
	}
	if !have {
		return nil
	}
	var hs []Headline
	seen := map[int64]bool{}
	for _, r := range d.Ours {
		if r.Name == "sum_reduce_on_stream" && r.Size >= 64<<20 && !seen[r.Size] {
			seen[r.Size] = true
			hs = append(hs, Headline{Label: fmt.Sprintf("float sum-reduce on stream %d MiB vs all_reduce (bus bandwidth)", r.Size>>20),
				Name: r.Name, Size: r.Size, PeerLib: "nccl", Max: false, Target: 0.9, BW: true})
		}
	}
	return hs
}
