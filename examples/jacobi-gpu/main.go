// Command jacobi-gpu is NVIDIA's multi-gpu-programming-models
// nvshmem/jacobi.cu on goshmem: a Go host driving the CUDA kernels of
// jacobi.cu (written with NVSHMEM names through goshmem's compatibility
// header, so the same source also builds against NVSHMEM).
//
// Usage (one PE per GPU, or several PEs sharing a GPU under MPS):
//
//	mpirun -np 2 ./jacobi-gpu [-nx 16384] [-ny 16384] [-niter 1000] [-nccheck 1]
//	    [-use_block_comm] [-neighborhood_sync] [-csv] [-fatbin bin/gpu/jacobi.fatbin]
//
// The kernels are loaded from -fatbin, by default gpu/jacobi.fatbin next to
// the executable (bin/gpu/jacobi.fatbin for bin/jacobi-gpu), built with
//
//	nvcc -std=c++17 -Iinclude -fatbin -gencode arch=compute_90,code=sm_90 \
//	    -gencode arch=compute_90,code=compute_90 -o bin/gpu/jacobi.fatbin examples/jacobi-gpu/jacobi.cu
//
// The problem is the original's: an ny x nx float mesh whose left and right
// columns hold sin(2π·iy/(ny-1)), periodic at top and bottom (rows 0 and
// ny-1 are halos), interior rows 1..ny-2 relaxed with
// a_new = 0.25·(east + west + south + north) for -niter iterations or until
// the L2 norm of the update is at most 1e-8, the norm computed every
// -nccheck iterations (and every 100 for the printout).
//
// First PE 0 runs the whole mesh on its GPU alone (plain CUDA kernels, the
// reference, "1 GPU"). Then every PE relaxes its band of rows (chunk sizes
// as in the original: (ny-2)/npes rows, one more on the last PEs when it
// does not divide), in symmetric GPU arrays a and a_new with a halo row
// above and below. The sweep kernel pushes the band's first and last rows
// into the neighbours' halos (nvshmem_float_p per thread, or one
// nvshmemx_float_put_nbi_block per block with -use_block_comm); after each
// sweep a one-thread kernel synchronizes: a device barrier over all PEs, or
// with -neighborhood_sync a quiet plus a signal to each neighbour and a wait
// for theirs. The partial norms are atomically summed on each GPU into one
// float per iteration; the host reads iteration k's while the GPU already
// runs iteration k+1 (it polls a word the sync kernel sets, so the GPU never
// idles waiting for the host), sums them over the PEs with shmem.Reduce,
// and stops at the first iteration whose norm is at most 1e-8, exactly as
// the reference does (iteration k+1 writes only the other buffer, so the
// result of k is intact).
//
// PE 0 then gathers the mesh with shmem.Get and compares every interior
// element with the reference (|ref - got| > 1e-8 fails, as in the
// original); on a mismatch it prints the first bad element and every PE
// exits 1.
//
// Output (PE 0), as the original's:
//
//	Single GPU jacobi relaxation: 1000 iterations on 16384 x 16384 mesh with norm check every 1 iterations
//	    0, 22.626005
//	  100, 0.450306
//	  ...
//	Jacobi relaxation: 1000 iterations on 16384 x 16384 mesh with norm check every 1 iterations
//	    0, 22.626005
//	  ...
//	Num GPUs: 2.
//	16384x16384: 1 GPU:   0.5000 s, 2 GPUs:   0.2600 s, speedup:     1.92, efficiency:    96.15
//
// With -csv only one line: goshmem, nx, ny, niter, nccheck, npes, 1, parallel s, 1-GPU s.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// tol is the original's: the convergence threshold of the norm and the
// element-wise tolerance of the check.
const tol = 1.0e-8

const pi = float32(math.Pi) // the original: 2.0 * std::asin(1.0) as real

const blockX, blockY = 32, 32

type config struct {
	nx, ny, niter, nccheck int
	useBlockComm, nbrSync  bool
	csv                    bool
	fatbin                 string
	pollTimeout            time.Duration
}

func defaultFatbin() string {
	exe, err := os.Executable()
	if err != nil {
		return filepath.Join("bin", "gpu", "jacobi.fatbin")
	}
	return filepath.Join(filepath.Dir(exe), "gpu", "jacobi.fatbin")
}

func main() {
	var cfg config
	flag.IntVar(&cfg.nx, "nx", 16384, "columns of the mesh")
	flag.IntVar(&cfg.ny, "ny", 16384, "rows of the mesh (rows 0 and ny-1 are the periodic halos)")
	flag.IntVar(&cfg.niter, "niter", 1000, "iterations")
	flag.IntVar(&cfg.nccheck, "nccheck", 1, "compute the norm (and test for convergence) every nccheck iterations")
	flag.BoolVar(&cfg.useBlockComm, "use_block_comm", false, "send halo rows with one block-level put per block instead of per-thread nvshmem_float_p")
	flag.BoolVar(&cfg.nbrSync, "neighborhood_sync", false, "synchronize with the two neighbours (signals) instead of a barrier over all PEs")
	flag.BoolVar(&cfg.csv, "csv", false, "print one CSV line instead of the report")
	flag.StringVar(&cfg.fatbin, "fatbin", defaultFatbin(), "the kernels (nvcc -fatbin of examples/jacobi-gpu/jacobi.cu)")
	flag.DurationVar(&cfg.pollTimeout, "timeout", 120*time.Second, "give up when the GPU makes no progress for this long")
	flag.Parse()
	code, err := run(cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jacobi-gpu:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// split is the original's row decomposition of the ny-2 interior rows.
type split struct {
	npes, low, high, numLow int
}

func newSplit(ny, npes int) split {
	low := (ny - 2) / npes
	return split{npes: npes, low: low, high: low + 1, numLow: npes*low + npes - (ny - 2)}
}

func (s split) rows(pe int) int {
	if pe < s.numLow {
		return s.low
	}
	return s.high
}

// first is the global row of pe's first interior row.
func (s split) first(pe int) int {
	if pe < s.numLow {
		return pe*s.low + 1
	}
	return s.numLow*s.low + (pe-s.numLow)*s.high + 1
}

// kernels are jacobi.cu's.
type kernels struct {
	mod                               *shmem.Module
	initBoundaries, jacobi, syncNbr   *shmem.Kernel
	barrier, jacobiSingle, periodicSG *shmem.Kernel
}

func loadKernels(path string) (*kernels, error) {
	m, err := shmem.LoadModuleFile(path)
	if err != nil {
		return nil, err
	}
	k := &kernels{mod: m}
	for _, x := range []struct {
		p    **shmem.Kernel
		name string
	}{
		{&k.initBoundaries, "initialize_boundaries"}, {&k.jacobi, "jacobi_kernel"},
		{&k.syncNbr, "syncneighborhood_kernel"}, {&k.barrier, "barrier_kernel"},
		{&k.jacobiSingle, "jacobi_kernel_single_gpu"}, {&k.periodicSG, "periodic_boundary_single_gpu"},
	} {
		if *x.p, err = m.Kernel(x.name); err != nil {
			return nil, err
		}
	}
	return k, nil
}

// heapBytes is the GPU heap one PE needs: the larger of the reference's two
// whole meshes and the distributed pair (freed in between), plus the norm
// slots and small words.
func heapBytes(cfg config) uint64 {
	mesh := 2 * uint64(cfg.nx) * uint64(cfg.ny+2) * 4
	return mesh + uint64(cfg.niter+1)*4 + 64<<20
}

func run(cfg config, w io.Writer) (int, error) {
	if cfg.nx < 3 || cfg.ny < 3 || cfg.niter < 0 || cfg.nccheck < 1 {
		return 1, fmt.Errorf("need -nx >= 3, -ny >= 3, -niter >= 0, -nccheck >= 1 (got %d, %d, %d, %d)",
			cfg.nx, cfg.ny, cfg.niter, cfg.nccheck)
	}
	if int64(cfg.nx)*int64(cfg.ny+2) > math.MaxInt32 {
		return 1, fmt.Errorf("-nx %d x -ny %d: the kernels index with 32-bit ints", cfg.nx, cfg.ny)
	}
	if _, set := os.LookupEnv("GOSHMEM_DEVICE_HEAP_SIZE"); !set {
		os.Setenv("GOSHMEM_DEVICE_HEAP_SIZE", fmt.Sprintf("%dM", (heapBytes(cfg)+(1<<20)-1)>>20))
	}
	if err := shmem.Init(); err != nil {
		return 1, err
	}
	me, npes := shmem.MyPE(), shmem.NPEs()
	if cfg.ny-2 < npes {
		return 1, fmt.Errorf("-ny %d leaves %d interior rows for %d PEs: every PE needs a row", cfg.ny, cfg.ny-2, npes)
	}
	k, err := loadKernels(cfg.fatbin)
	if err != nil {
		return 1, err
	}
	nx, ny := cfg.nx, cfg.ny

	// ---- the single-GPU reference, on PE 0 (the arrays are symmetric, so
	// every PE allocates them; only PE 0 uses them) ----
	var ref []float32
	var refIters int
	var serial float64
	{
		aRef, err := shmem.AllocDevice[float32](nx * ny)
		if err != nil {
			return 1, err
		}
		aNewRef, err := shmem.AllocDevice[float32](nx * ny)
		if err != nil {
			return 1, err
		}
		normRef, err := shmem.AllocDevice[float32](max(cfg.niter, 1))
		if err != nil {
			return 1, err
		}
		// AllocDevice's zeroing (cuMemsetD8) is asynchronous and not ordered
		// before launches on the PE's non-blocking stream: wait for it.
		if err := shmem.Synchronize(); err != nil {
			return 1, err
		}
		if me == 0 {
			ref, refIters, serial, err = singleGPU(k, cfg, aRef, aNewRef, normRef, w)
			if err != nil {
				return 1, err
			}
		}
		if err := shmem.BarrierAll(); err != nil {
			return 1, err
		}
		for _, f := range []func() error{aRef.Free, aNewRef.Free, normRef.Free} {
			if err := f(); err != nil {
				return 1, err
			}
		}
	}

	// ---- the distributed run ----
	s := newSplit(ny, npes)
	d, err := newDomain(k, s, cfg)
	if err != nil {
		return 1, err
	}
	if me == 0 && !cfg.csv {
		fmt.Fprintf(w, "Jacobi relaxation: %d iterations on %d x %d mesh with norm check every %d iterations\n",
			cfg.niter, ny, nx, cfg.nccheck)
	}
	if err := shmem.Synchronize(); err != nil {
		return 1, err
	}
	if err := shmem.BarrierAll(); err != nil {
		return 1, err
	}
	start := time.Now()
	iters, err := d.solve(cfg, w)
	if err != nil {
		return 1, err
	}
	if iters < cfg.niter && me == 0 {
		fmt.Fprintf(os.Stderr, "jacobi-gpu: converged after %d iterations (reference: %d)\n", iters, refIters)
	}
	if err := shmem.Synchronize(); err != nil {
		return 1, err
	}
	if err := shmem.BarrierAll(); err != nil {
		return 1, err
	}
	parallel := time.Since(start).Seconds()

	// ---- gather to PE 0 and compare element by element ----
	ok := int32(1)
	if me == 0 {
		got := make([]float32, nx*ny)
		for pe := 0; pe < npes; pe++ {
			rows := got[s.first(pe)*nx : (s.first(pe)+s.rows(pe))*nx]
			if err := shmem.Get(rows, d.a[iters%2], nx, pe); err != nil {
				return 1, err
			}
		}
		if iters != refIters {
			fmt.Fprintf(os.Stderr, "ERROR: %d GPUs ran %d iterations, the reference %d\n", npes, iters, refIters)
			ok = 0
		}
	check:
		for iy := 1; iy < ny-1; iy++ {
			for ix := 1; ix < nx-1; ix++ {
				i := iy*nx + ix
				// float64 compare: a NaN on either side is a mismatch.
				if !(math.Abs(float64(ref[i])-float64(got[i])) <= tol) {
					fmt.Fprintf(os.Stderr, "ERROR on rank %d: a[%d * %d + %d] = %f does not match %f (reference)\n",
						me, iy, nx, ix, got[i], ref[i])
					ok = 0
					break check
				}
			}
		}
	}
	d.flag.Local()[0] = ok
	if err := shmem.Broadcast(shmem.TeamWorld, d.verdict, d.flag, 1, 0); err != nil {
		return 1, err
	}
	ok = d.verdict.Local()[0]
	if me == 0 && ok == 1 {
		if cfg.csv {
			fmt.Fprintf(w, "goshmem, %d, %d, %d, %d, %d, 1, %f, %f\n", nx, ny, cfg.niter, cfg.nccheck, npes, parallel, serial)
		} else {
			fmt.Fprintf(w, "Num GPUs: %d.\n", npes)
			fmt.Fprintf(w, "%dx%d: 1 GPU: %8.4f s, %d GPUs: %8.4f s, speedup: %8.2f, efficiency: %8.2f \n",
				ny, nx, serial, npes, parallel, serial/parallel, serial/(float64(npes)*parallel)*100)
		}
	}
	if err := d.free(); err != nil {
		return 1, err
	}
	if err := shmem.Finalize(); err != nil {
		return 1, err
	}
	if ok != 1 {
		return 1, nil
	}
	return 0, nil
}

func grid2(nx, rows int) shmem.Dim3 {
	return shmem.Dim(uint32((nx+blockX-1)/blockX), uint32((rows+blockY-1)/blockY))
}

// normPtr is the device address of slot i of a float32 device array.
func normPtr(a shmem.Array[float32], i int) uintptr { return a.DevicePtr() + uintptr(4*i) }

// singleGPU is the original's single_gpu(): the whole mesh on this GPU,
// periodic rows by a copy kernel. It returns the final mesh (ny x nx, on
// the host), the iterations run and the solve time.
func singleGPU(k *kernels, cfg config, a, aNew, norm shmem.Array[float32], w io.Writer) ([]float32, int, float64, error) {
	nx, ny := cfg.nx, cfg.ny
	print := !cfg.csv
	if err := shmem.Launch(k.initBoundaries, shmem.LaunchConfig{Grid: shmem.Dim(uint32(ny/128 + 1)), Block: shmem.Dim(128)},
		a, aNew, pi, int32(0), int32(nx), int32(ny), int32(ny)); err != nil {
		return nil, 0, 0, err
	}
	if err := shmem.Synchronize(); err != nil {
		return nil, 0, 0, err
	}
	if print {
		fmt.Fprintf(w, "Single GPU jacobi relaxation: %d iterations on %d x %d mesh with norm check every %d iterations\n",
			cfg.niter, ny, nx, cfg.nccheck)
	}
	iyStart, iyEnd := 1, ny-1
	sweep := shmem.LaunchConfig{Grid: grid2(nx, ny), Block: shmem.Dim(blockX, blockY)}
	copyRows := shmem.LaunchConfig{Grid: shmem.Dim(uint32(nx/128 + 1)), Block: shmem.Dim(128)}
	buf := [2]shmem.Array[float32]{a, aNew}
	l2 := float32(1.0)
	iter := 0
	start := time.Now()
	for ; float64(l2) > tol && iter < cfg.niter; iter++ {
		calc := iter%cfg.nccheck == 0 || (print && iter%100 == 0)
		cur, next := buf[iter%2], buf[(iter+1)%2]
		if err := shmem.Launch(k.jacobiSingle, sweep, next, cur, normPtr(norm, iter),
			int32(iyStart), int32(iyEnd), int32(nx), b2i(calc)); err != nil {
			return nil, 0, 0, err
		}
		if err := shmem.Launch(k.periodicSG, copyRows, next, int32(iyStart), int32(iyEnd), int32(nx)); err != nil {
			return nil, 0, 0, err
		}
		if calc {
			if err := shmem.Synchronize(); err != nil {
				return nil, 0, 0, err
			}
			v, err := shmem.G(norm, iter, shmem.MyPE())
			if err != nil {
				return nil, 0, 0, err
			}
			l2 = float32(math.Sqrt(float64(v)))
			if print && iter%100 == 0 {
				fmt.Fprintf(w, "%5d, %0.6f\n", iter, l2)
			}
		}
	}
	if err := shmem.Synchronize(); err != nil {
		return nil, 0, 0, err
	}
	elapsed := time.Since(start).Seconds()
	out := make([]float32, nx*ny)
	if err := shmem.Get(out, buf[iter%2], 0, shmem.MyPE()); err != nil {
		return nil, 0, 0, err
	}
	return out, iter, elapsed, nil
}

func b2i(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// domain is this PE's part of the distributed mesh.
type domain struct {
	k        *kernels
	me, npes int
	nx, rows int
	top, bot int // neighbour PEs (periodic)
	topIy    int // the top neighbour's lower halo row (its rows + 1)
	// a[0], a[1]: the two meshes, (chunk_high + 2) rows on every PE: row 0
	// the upper halo, 1..rows owned, rows+1 the lower halo.
	a       [2]shmem.Array[float32]
	norm    shmem.Array[float32] // one partial sum per iteration (zeroed: no reset)
	syncArr shmem.Array[uint64]  // -neighborhood_sync words: [0] from the upper, [1] from the lower PE
	done    shmem.Array[uint64]  // the last iteration whose sync kernel finished (1-based)
	hnorm   shmem.Array[float32] // host: this PE's partial, then the sum over PEs
	flag    shmem.Array[int32]   // host: PE 0's verdict, and its broadcast copy
	verdict shmem.Array[int32]
}

func newDomain(k *kernels, s split, cfg config) (*domain, error) {
	me, npes := shmem.MyPE(), shmem.NPEs()
	d := &domain{k: k, me: me, npes: npes, nx: cfg.nx, rows: s.rows(me),
		top: (me - 1 + npes) % npes, bot: (me + 1) % npes}
	d.topIy = s.rows(d.top) + 1
	var err error
	for i := range d.a {
		if d.a[i], err = shmem.AllocDevice[float32](cfg.nx * (s.high + 2)); err != nil {
			return nil, err
		}
	}
	if d.norm, err = shmem.AllocDevice[float32](max(cfg.niter, 1)); err != nil {
		return nil, err
	}
	if d.syncArr, err = shmem.AllocDevice[uint64](2); err != nil {
		return nil, err
	}
	if d.done, err = shmem.AllocDevice[uint64](1); err != nil {
		return nil, err
	}
	if d.hnorm, err = shmem.Alloc[float32](1); err != nil {
		return nil, err
	}
	if d.flag, err = shmem.Alloc[int32](1); err != nil {
		return nil, err
	}
	if d.verdict, err = shmem.Alloc[int32](1); err != nil {
		return nil, err
	}
	// Wait for AllocDevice's asynchronous zeroing (see run) before the
	// first kernel writes these arrays.
	if err := shmem.Synchronize(); err != nil {
		return nil, err
	}
	// Dirichlet boundaries of the band, halo rows included.
	err = shmem.Launch(k.initBoundaries, shmem.LaunchConfig{Grid: shmem.Dim(uint32((cfg.ny/npes)/128 + 1)), Block: shmem.Dim(128)},
		d.a[0], d.a[1], pi, int32(s.first(me)-1), int32(cfg.nx), int32(d.rows+2), int32(cfg.ny))
	if err != nil {
		return nil, err
	}
	return d, nil
}

func (d *domain) free() error {
	for _, f := range []func() error{d.a[0].Free, d.a[1].Free, d.norm.Free, d.syncArr.Free, d.done.Free,
		d.hnorm.Free, d.flag.Free, d.verdict.Free} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// solve runs the distributed iterations and returns how many ran; the
// result is in d.a[iters%2].
func (d *domain) solve(cfg config, w io.Writer) (int, error) {
	print := !cfg.csv
	calcAt := func(iter int) bool { return iter%cfg.nccheck == 0 || (print && iter%100 == 0) }
	sweep := shmem.LaunchConfig{Grid: grid2(d.nx, d.rows), Block: shmem.Dim(blockX, blockY)}
	one := shmem.LaunchConfig{Grid: shmem.Dim(1), Block: shmem.Dim(1)}
	iyStart, iyEnd := int32(1), int32(d.rows+1)

	// finish reads iteration it's norm (once its sync kernel ran), sums it
	// over the PEs, prints it, and reports whether it converged.
	finish := func(it int) (bool, error) {
		if err := d.waitDone(uint64(it+1), cfg.pollTimeout); err != nil {
			return false, err
		}
		v, err := shmem.G(d.norm, it, d.me)
		if err != nil {
			return false, err
		}
		d.hnorm.Local()[0] = v
		if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, d.hnorm, d.hnorm, 1); err != nil {
			return false, err
		}
		l2 := float32(math.Sqrt(float64(d.hnorm.Local()[0])))
		if print && it%100 == 0 && d.me == 0 {
			fmt.Fprintf(w, "%5d, %0.6f\n", it, l2)
		}
		return !(float64(l2) > tol), nil
	}

	for iter := 0; iter < cfg.niter; iter++ {
		cur, next := d.a[iter%2], d.a[(iter+1)%2]
		if err := shmem.Launch(d.k.jacobi, sweep, next, cur, normPtr(d.norm, iter), iyStart, iyEnd, int32(d.nx),
			int32(d.top), int32(d.topIy), int32(d.bot), int32(0), b2i(calcAt(iter)), b2i(cfg.useBlockComm)); err != nil {
			return iter, err
		}
		var err error
		if cfg.nbrSync {
			err = shmem.Launch(d.k.syncNbr, one, int32(d.me), int32(d.npes), d.syncArr, uint64(iter+1), d.done)
		} else {
			err = shmem.Launch(d.k.barrier, one, uint64(iter+1), d.done)
		}
		if err != nil {
			return iter, err
		}
		// The previous iteration's norm, read while this one runs. If it
		// converged, stop there: this sweep wrote only the other buffer.
		if iter > 0 && calcAt(iter-1) {
			conv, err := finish(iter - 1)
			if err != nil {
				return iter, err
			}
			if conv {
				return iter, nil
			}
		}
	}
	if cfg.niter > 0 && calcAt(cfg.niter-1) {
		if _, err := finish(cfg.niter - 1); err != nil {
			return cfg.niter, err
		}
	}
	return cfg.niter, nil
}

// waitDone polls the done word (a device-to-host copy per look) until the
// sync kernel of iteration target-1 has finished.
func (d *domain) waitDone(target uint64, timeout time.Duration) error {
	var deadline time.Time
	for n := 0; ; n++ {
		v, err := shmem.G(d.done, 0, d.me)
		if err != nil {
			return err
		}
		if v >= target {
			return nil
		}
		if n == 1000 {
			deadline = time.Now().Add(timeout)
		} else if n > 1000 && n%1000 == 0 && time.Now().After(deadline) {
			if err := shmem.Synchronize(); err != nil { // a fault, if that is what stopped it
				return err
			}
			return fmt.Errorf("PE %d: iteration %d not finished after %v (the GPU reached iteration %d)", d.me, target, timeout, v)
		}
	}
}
