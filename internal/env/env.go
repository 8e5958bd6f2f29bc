// Package env is goshmem's one table of environment variables: every
// GOSHMEM_* setting is one row here, read once at Init, and printed with its
// source by GOSHMEM_INFO=1.
package env

import (
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/logx"
)

// Var is one row of the table.
type Var struct {
	Name    string
	Default string
	Help    string
	kind    kind
	secret  bool // Print shows whether it is set, never the value
}

type kind int

const (
	kindBool kind = iota
	kindSize
	kindDuration
	kindString
)

// Table lists every variable goshmem reads. Append rows; keep names stable.
var Table = []Var{
	{Name: "GOSHMEM_SYMMETRIC_SIZE", Default: "1G", kind: kindSize,
		Help: "bytes of symmetric heap per PE (suffix K, M, G); reserved sparsely, committed on first touch; the team slots (GOSHMEM_MAX_TEAMS) come on top"},
	{Name: "GOSHMEM_MAX_TEAMS", Default: "1088", kind: kindString,
		Help: "team slots per PE, the predefined world and node team included: how many teams may be alive at once, on the host and in the GPU's team table, in [2, 16384]; the same on every PE. Each slot adds 18 KiB to every PE's symmetric region (committed as its team is used) and 34 KiB of GPU memory to every PE's GPU heap"},
	{Name: "GOSHMEM_INFO", Default: "0", kind: kindBool,
		Help: "print the transport chosen per peer and every setting with its source at Init (PE 0)"},
	{Name: "GOSHMEM_DEBUG", Default: "0", kind: kindBool,
		Help: "debug checks: freed blocks are poisoned and quarantined so use after Free is caught"},
	{Name: "GOSHMEM_TIMEOUT", Default: "0", kind: kindDuration,
		Help: "watchdog: a wait, quiet or barrier longer than this fails with ErrTimeout (0 = off; e.g. 10s)"},
	{Name: "GOSHMEM_TRANSPORT", Default: "auto", kind: kindString,
		Help: "host transport: auto (shm on one node, ofi across nodes), shm, or ofi (every peer over libfabric, for tests on one machine)"},
	{Name: "GOSHMEM_OFI_PROVIDER", Default: "tcp;ofi_rxm", kind: kindString,
		Help: "libfabric provider of the ofi transport (tcp;ofi_rxm, verbs;ofi_rxm, cxi, shm, sockets; fi_info -l lists them)"},
	{Name: "GOSHMEM_GPU", Default: "auto", kind: kindString,
		Help: "auto (use a GPU when the driver finds one), on (Init fails without one), off"},
	{Name: "GOSHMEM_DEVICE_HEAP_SIZE", Default: "1G", kind: kindSize,
		Help: "bytes of GPU symmetric heap per PE mapped at Init when a GPU is used: the initial size of a heap that grows (CUDA VMM), the whole heap otherwise (cuMemAlloc, legacy CUDA IPC); the control area of the team slots (GOSHMEM_MAX_TEAMS) comes on top"},
	{Name: "GOSHMEM_DEVICE_HEAP_MAX", Default: "auto", kind: kindString,
		Help: "bytes the GPU symmetric heap may grow to per PE (address space reserved at Init; suffix K, M, G, T); auto: the GPU's memory; fixed: no growth, one cuMemAlloc of GOSHMEM_DEVICE_HEAP_SIZE shared by legacy CUDA IPC (as without CUDA VMM). AllocDevice maps more as it needs it, collectively"},
	{Name: "GOSHMEM_DEVICE_HEAP_CHUNK", Default: "512M", kind: kindSize,
		Help: "the least a growing GPU heap (CUDA VMM) maps at a time, per PE (suffix K, M, G; rounded up to the allocation granularity, 2M on current GPUs, which maps only what an allocation needs; at most what GOSHMEM_DEVICE_HEAP_MAX leaves). Every growth costs every PE of the node driver calls for its own chunk and each peer's, so fewer, larger growths make AllocDevice cheaper; the memory mapped beyond the need serves the next allocations. Once an allocation leaves less than this much of the heap (or less than the largest block allocated so far, doubled while allocations come faster than it is prepared, up to 4 times this), the next chunk of that size is created, zeroed and mapped on the node's PEs in the background, so the growth that needs it only adopts it: up to that much more GPU memory per PE is held ahead of need"},
	{Name: "GOSHMEM_DEVICE", Default: "", kind: kindString,
		Help: "the GPU this PE uses, an ordinal in [0, device count); empty: the device of a CUDA context current on the thread calling Init, else local rank modulo device count; shmem.WithDevice overrides it"},
	{Name: "GOSHMEM_LIBMPI", Default: "", kind: kindString,
		Help: "the MPI library to dlopen under an MPI launcher (a path or soname); empty: the first of libmpi.so.40 (Open MPI), libmpi.so.12, libmpich.so.12 (MPICH ABI), libmpi.so, libmpich.so that loads, MPICH's first under Hydra; never loaded without a launcher"},
	{Name: "GOSHMEM_LIBCUDA", Default: "libcuda.so.1", kind: kindString,
		Help: "the CUDA driver library to dlopen"},
	{Name: "GOSHMEM_BOOTSTRAP", Default: "auto", kind: kindString,
		Help: "auto (MPI under mpirun, tcp when GOSHMEM_RANK, GOSHMEM_NPES or GOSHMEM_BOOTSTRAP_ADDR is set or MASTER_ADDR with RANK or SLURM_PROCID, 1-PE job otherwise), mpi, tcp, or single"},
	{Name: "GOSHMEM_RANK", Default: "", kind: kindString,
		Help: "tcp bootstrap: this PE's rank (else torchrun's RANK, else Slurm's SLURM_PROCID)"},
	{Name: "GOSHMEM_NPES", Default: "", kind: kindString,
		Help: "tcp bootstrap: the number of PEs (else WORLD_SIZE, else SLURM_NTASKS)"},
	{Name: "GOSHMEM_BOOTSTRAP_ADDR", Default: "", kind: kindString,
		Help: "tcp bootstrap: host:port where PE 0 listens and every PE connects (else MASTER_ADDR:MASTER_PORT); NewUniqueID's listen address (port 0: any)"},
	{Name: "GOSHMEM_BOOTSTRAP_TOKEN", Default: "", kind: kindString, secret: true,
		Help: "tcp bootstrap: the job's shared secret; every connection proves it (HMAC). Required on a shared network"},
	{Name: "GOSHMEM_BOOTSTRAP_TIMEOUT", Default: "60s", kind: kindDuration,
		Help: "tcp bootstrap: how long PEs wait for every PE to join before Init fails on all"},
	{Name: "GOSHMEM_GPU_TRANSPORT", Default: "auto", kind: kindString,
		Help: "how kernels reach other PEs' GPU heaps: auto (load/store where the peer's heap is mapped here, through CUDA VMM or IPC, else proxy), p2p, proxy (every peer through CPU proxy workers), or ibgda (GPU-built mlx5 WQEs; see GOSHMEM_IBGDA_NIC)"},
	{Name: "GOSHMEM_PROXY_WORKERS", Default: "1", kind: kindSize,
		Help: "proxy: CPU worker threads per PE (T), pinned to cores near the GPU"},
	{Name: "GOSHMEM_PROXY_RINGS", Default: "4", kind: kindSize,
		Help: "proxy: descriptor rings of the default device context (R); contexts >= 1 get one reserved ring each"},
	{Name: "GOSHMEM_PROXY_CONTEXTS", Default: "8", kind: kindSize,
		Help: "proxy: device contexts (the default one included), at most 32"},
	{Name: "GOSHMEM_PROXY_SLOTS", Default: "1024", kind: kindSize,
		Help: "proxy: 16-byte descriptors per ring (a power of two)"},
	{Name: "GOSHMEM_PROXY_BATCH", Default: "16", kind: kindSize,
		Help: "proxy: requests a worker chains per submission (B)"},
	{Name: "GOSHMEM_PROXY_BACKEND", Default: "auto", kind: kindString,
		Help: "how proxy workers reach a peer's GPU heap: auto (the node's mapped heaps, CUDA VMM or IPC, on this node; ofi to other nodes), cuda (mapped heaps only), or ofi (every peer through the ofi backend: requests staged in host memory and applied by the peer's proxy; with GOSHMEM_TRANSPORT=ofi this tests the inter-node path on one machine)"},
	{Name: "GOSHMEM_PROXY_INFLIGHT", Default: "auto", kind: kindString,
		Help: "proxy (CUDA backend): chains a worker's CUDA stream may hold that the GPU has not executed; past it the worker waits (back-pressure stays in the rings); auto: 32, or 8 when the throttle drains"},
	{Name: "GOSHMEM_PROXY_THROTTLE", Default: "auto", kind: kindString,
		Help: "proxy (CUDA backend): what a worker past GOSHMEM_PROXY_INFLIGHT waits for: keep (until its stream is below the bound) or drain (until its stream is empty, so the GPU also serves other processes' streams; needed when several PEs share one GPU under MPS); auto: drain when another PE on this node uses the same GPU, else keep"},
	{Name: "GOSHMEM_PROXY_MODE", Default: "tuned", kind: kindString,
		Help: "proxy producer protocol: tuned (one posted 16-byte store per request) or baseline (atomic reservation, progress read and release store per request)"},
	{Name: "GOSHMEM_CXI_ENGINE", Default: "auto", kind: kindString,
		Help: "CXI triggered path: auto or fabric (libfabric deferred work: cxi, else sockets; a provider without it is an error), software (monitor-run emulation on any provider)"},
	{Name: "GOSHMEM_CXI_PROVIDER", Default: "auto", kind: kindString,
		Help: "libfabric provider of the CXI triggered path (auto: cxi where present, else sockets)"},
	{Name: "GOSHMEM_IBGDA_NIC", Default: "mlx5", kind: kindString,
		Help: "NIC of GOSHMEM_GPU_TRANSPORT=ibgda: mlx5 (a ConnectX found by rdma-core, else Init fails) or soft (the soft NIC, an EMULATION)"},
	{Name: "GOSHMEM_IBGDA_DEVICE", Default: "auto", kind: kindString,
		Help: "GOSHMEM_IBGDA_NIC=mlx5: the RDMA device (e.g. mlx5_0; auto: the first mlx5 device), port 1"},
	{Name: "GOSHMEM_IBGDA_GID_INDEX", Default: "0", kind: kindString,
		Help: "GOSHMEM_IBGDA_NIC=mlx5 on RoCE: the GID table index peers are addressed by (show_gids lists them; RoCE v2 is often 3)"},
	{Name: "GOSHMEM_IBGDA_DOORBELL", Default: "gpu", kind: kindString,
		Help: "gpu (GPU threads store the doorbell to the NIC's UAR mapped into the GPU; mlx5 needs the NVIDIA driver's PeerMappingOverride=1) or cpu (CPU-assisted: GPU threads build WQEs and publish the doorbell record, a host thread rings the UAR; with GOSHMEM_IBGDA_NIC=soft it rings the emulated NIC's doorbell word, which alone drives it)"},
	{Name: "GOSHMEM_IBGDA_QUEUES", Default: "host", kind: kindString,
		Help: "GOSHMEM_IBGDA_NIC=mlx5: where the SQ and CQ rings and doorbell records live: host (rdma-core's verbs QP/CQ in host memory, mapped into the GPU) or gpu (GPU memory registered with the NIC by dma-buf as a devx umem, CQ/QP created by devx commands, NVSHMEM's nic_buf_on_gpumem; needs devx, rdma-core >= 43 and GOSHMEM_IBGDA_DOORBELL=gpu; never run on a ConnectX)"},
	{Name: "GOSHMEM_PROXY_STREAM_PRIORITY", Default: "high", kind: kindString,
		Help: "proxy (CUDA backend), diagnostic: priority of the workers' CUDA streams: high (the device's highest) or normal (the default priority)"},
	{Name: "GOSHMEM_PROXY_INLINE", Default: "write", kind: kindString,
		Help: "proxy (CUDA backend), diagnostic: how 8-byte inline puts reach the GPU heap: write (stream memory writes) or copy (host-to-device copies on the copy engine)"},
	{Name: "GOSHMEM_GPU_COLL_GRID", Default: "128K", kind: kindString,
		Help: "on-stream collectives (and host collectives on GPU arrays) whose members are all load/store reachable: a reduction of at least this x members/2 bytes, or a broadcast, fcollect or alltoall delivering at least twice that to each member, moves its data on a grid of blocks between two team syncs (GOSHMEM_GPU_COLL_FUSED); smaller ones run as one one-block kernel; off: never a grid"},
	{Name: "GOSHMEM_GPU_COLL_BLOCK", Default: "16K", kind: kindSize,
		Help: "the grid of GOSHMEM_GPU_COLL_GRID: one block per this many bytes of a PE's part (at least 1K), up to one block per SM shared among the PEs that use the same GPU; a broadcast, fcollect or alltoall then grows at one block per 256 KiB up to two per SM"},
	{Name: "GOSHMEM_GPU_COLL_FUSED", Default: "1", kind: kindBool,
		Help: "a grid of GOSHMEM_GPU_COLL_GRID of at most one block per SM shared among the PEs that use the same GPU runs as one kernel that does the two team syncs itself (its blocks wait for each other's, so every member's grid must fit on the GPU at once); 0: a team sync kernel, the grid kernel and a second team sync kernel, as larger grids always run"},
	{Name: "GOSHMEM_GPU_COLL_LL", Default: "2K", kind: kindString,
		Help: "device collectives (and the one-block on-stream ones) over load/store members: a reduce, reducescatter, fcollect or alltoall whose block per member is at most this many bytes sends it as 8-byte packets of 4 data bytes and a tag, which the receivers poll, instead of a store and a flag round; capped at 4K/members, at 8 bytes (or 16/(members-1)) for the one-thread forms and at 512/(members-1) bytes for the warp forms; off: never"},
	{Name: "GOSHMEM_GPU_COLL_THREADS", Default: "auto", kind: kindString,
		Help: "diagnostic: the block of the one-block on-stream collective kernels (barrier, sync, and reduce, broadcast, fcollect, alltoall below GOSHMEM_GPU_COLL_GRID): auto (one thread per 16 bytes this PE moves, in whole warps, 32 to 1024) or a multiple of 32 in [32, 1024]"},
	{Name: "GOSHMEM_GPU_STREAM_SYNC", Default: "auto", kind: kindString,
		Help: "on-stream barriers and syncs (BarrierAllOnStream, SyncAllOnStream, Team.BarrierOnStream, Team.SyncOnStream) when no GPU remote transport is configured: auto (memops for a team of 2 members, kernel for larger teams), memops (stream memory operations, no kernel: a team of up to 8 members syncs flat, each member writing a flag on every other and waiting on its own, a larger team in dissemination rounds), dissemination (diagnostic: memory operations in dissemination rounds for every team) or kernel (a one-warp barrier kernel, as with a GPU remote transport). A stream being captured into a CUDA graph always gets the kernel"},
	{Name: "GOSHMEM_GPU_LAUNCH_OVERLAP", Default: "1", kind: kindBool,
		Help: "goshmem's one-block kernels (the on-stream calls, and host collectives on GPU arrays below GOSHMEM_GPU_COLL_GRID) are launched with programmatic dependent launch (cuLaunchKernelEx, programmatic stream serialization): one is scheduled as the stream's previous goshmem kernel exits and waits on the GPU until that kernel has completed, so its launch overlaps the other's end; stream order is kept. 0: plain launches. A driver that refuses it gets plain launches from then on"},
	{Name: "GOSHMEM_GPU_LIB", Default: "", kind: kindString,
		Help: "diagnostic: a fatbin file to load as goshmem's kernel library instead of the one the program's import of github.com/goshmem/goshmem/gpulib registers (gpulib/lib.fatbin), e.g. lib.cu rebuilt with a change to measure; it must come from the same goshmem version (same kernels and argument layout)"},
	{Name: "GOSHMEM_OFI_IFACE", Default: "", kind: kindString,
		Help: "ofi transport: the network interface whose address peers reach this PE by (e.g. eth0, ib0; empty: auto, an IPv4 address off loopback first, never an IPv6 link-local one)"},
}

// Sanctioned lists the GOSHMEM_* variables that are not library settings
// but are read by goshmem's build and test scripts (scripts/cuda.sh,
// tests/hdr/run.sh, the Makefile); Unknown does not report them.
var Sanctioned = []string{
	"GOSHMEM_CUDA_FORCE",            // scripts/cuda.sh: reinstall the CUDA toolkit even when nvcc works
	"GOSHMEM_REQUIRE_NVCC",          // make hdrcheck / fatbins: fail instead of skipping without nvcc
	"GOSHMEM_REQUIRE_MPICH",         // make test, .ci/run: the MPICH tests fail instead of skipping without MPICH
	"GOSHMEM_REQUIRE_LIBFABRIC_DEV", // make test: internal/cgo/fabric's ABI check fails instead of skipping without libfabric's headers
	"GOSHMEM_REQUIRE_RDMA_CORE_DEV", // make test: internal/cgo/verbs's ABI check fails instead of skipping without rdma-core's headers
	"GOSHMEM_REQUIRE_BUILDCHECK",    // scripts/buildcheck.sh: fail instead of skipping without root or unshare
}

// Setting is a parsed value and where it came from.
type Setting struct {
	Var
	Value  string
	Source string // "default" or "environment"
}

// Settings is the table read at one moment.
type Settings map[string]Setting

// Read reads every row from the process environment (lookup = os.LookupEnv
// when nil) and validates it; the first bad value is an error naming the
// variable and the accepted form.
func Read(lookup func(string) (string, bool)) (Settings, error) {
	if lookup == nil {
		lookup = os.LookupEnv
	}
	s := make(Settings, len(Table))
	for _, v := range Table {
		st := Setting{Var: v, Value: v.Default, Source: "default"}
		if val, ok := lookup(v.Name); ok && val != "" {
			st.Value, st.Source = val, "environment"
		}
		if err := st.validate(); err != nil {
			return nil, err
		}
		s[v.Name] = st
	}
	return s, nil
}

func (st Setting) validate() error {
	var err error
	switch st.kind {
	case kindBool:
		_, err = ParseBool(st.Value)
	case kindSize:
		_, err = ParseSize(st.Value)
	case kindDuration:
		_, err = ParseDuration(st.Value)
	}
	if err != nil {
		return errors.WithHint(errors.Wrapf(err, "env: %s=%q", st.Name, st.Value), st.Help)
	}
	return nil
}

// Bool returns a boolean setting.
func (s Settings) Bool(name string) bool { b, _ := ParseBool(s.get(name).Value); return b }

// Size returns a size setting in bytes.
func (s Settings) Size(name string) uint64 { n, _ := ParseSize(s.get(name).Value); return n }

// Duration returns a duration setting.
func (s Settings) Duration(name string) time.Duration {
	d, _ := ParseDuration(s.get(name).Value)
	return d
}

// String returns a string setting.
func (s Settings) String(name string) string { return s.get(name).Value }

func (s Settings) get(name string) Setting {
	st, ok := s[name]
	if !ok {
		panic("env: " + name + " is not in the table")
	}
	return st
}

// Print writes every setting with its value and source.
func (s Settings) Print(w io.Writer) { s.Log(logx.New(nil, w), -1) }

// Log logs every setting with its value and source: a record with the
// attributes setting, value and source (and pe when pe >= 0), or the line
// "goshmem: info: <setting> = <value> (<source>) <help>" without a
// *slog.Logger.
func (s Settings) Log(lg *logx.Logger, pe int) {
	names := make([]string, 0, len(s))
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		st := s[n]
		v := st.Value
		if st.secret && v != "" {
			v = "(set)"
		}
		attrs := []slog.Attr{slog.String("setting", n), slog.String("value", v), slog.String("source", st.Source)}
		if pe >= 0 {
			attrs = append(attrs, logx.PE(pe))
		}
		lg.Info(fmt.Sprintf("goshmem: info: %-24s = %-8s (%s) %s\n", n, v, st.Source, st.Help), "setting", attrs...)
	}
}

// ParseBool accepts 1/0, true/false, yes/no, on/off.
func ParseBool(v string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "yes", "on", "y":
		return true, nil
	case "0", "false", "no", "off", "n", "":
		return false, nil
	}
	return false, errors.Newf("not a boolean (want 1/0, true/false, yes/no, on/off)")
}

// ParseSize accepts a byte count with an optional K, M, G or T suffix
// (powers of 1024), e.g. 512M.
func ParseSize(v string) (uint64, error) {
	v = strings.TrimSpace(strings.ToUpper(v))
	v = strings.TrimSuffix(v, "B")
	// "i" only after a unit (KiB, MiB): "5i" and "5iB" are not sizes
	unitI := strings.HasSuffix(v, "I")
	v = strings.TrimSuffix(v, "I")
	mult := uint64(1)
	if n := len(v); n > 0 {
		switch v[n-1] {
		case 'K':
			mult = 1 << 10
		case 'M':
			mult = 1 << 20
		case 'G':
			mult = 1 << 30
		case 'T':
			mult = 1 << 40
		}
		if mult != 1 {
			v = v[:n-1]
		}
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil || n == 0 || (unitI && mult == 1) {
		return 0, errors.Newf("not a positive size (want e.g. 1048576, 512M, 2G)")
	}
	if n > (1<<63)/mult {
		return 0, errors.Newf("size overflows 64 bits")
	}
	return n * mult, nil
}

// ParseDuration accepts a Go duration (10s, 500ms) or a number of seconds.
func ParseDuration(v string) (time.Duration, error) {
	v = strings.TrimSpace(v)
	// The upper bound keeps +Inf and huge values from converting to a
	// negative Duration (an out-of-range float-to-int conversion).
	if f, err := strconv.ParseFloat(v, 64); err == nil && f >= 0 && f < math.MaxInt64/float64(time.Second) {
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, errors.Newf("not a duration (want e.g. 10s, 500ms, or seconds as a number)")
	}
	return d, nil
}
