// Command jacobi-cpu is NVIDIA's multi-gpu-programming-models
// nvshmem/jacobi.cu on CPU PEs: Jacobi relaxation of the 2D Laplace equation
// on an ny x nx float32 mesh, rows split over the PEs, halo rows exchanged
// with put-with-signal, and the result checked against a single-PE run.
//
// Usage:
//
//	mpirun --oversubscribe -np 4 ./jacobi-cpu [-nx 1536] [-ny 1536] [-niter 1000] [-nccheck 1] [-csv] [-workers 0]
//
// The original's default mesh is 16384 x 16384 for GPUs; 1536 x 1536 keeps
// a 4-PE run on a 2-core machine, 1-PE reference included, well under 30 s.
// mpirun binds each process to one core when np <= 2: add --bind-to none to
// give a 1-PE run both cores.
//
// The problem: the left and right columns hold sin(2π·iy/(ny-1)) (iy the
// global row); the top and bottom are periodic. Each iteration computes, for
// every row and the interior columns 1..nx-2,
//
//	a_new(iy,ix) = 0.25 * (a(iy,ix+1) + a(iy,ix-1) + a(iy+1,ix) + a(iy-1,ix))
//
// and, every -nccheck iterations (and every 100 for the printout), the L2
// norm sqrt(Σ (a_new-a)²) over all PEs with shmem.Reduce; it stops after
// -niter iterations or when the norm is at most 1e-8.
//
// First PE 0 runs the whole mesh alone, in plain Go memory (the reference,
// "1 PE"); then all PEs run the distributed version on the symmetric heap.
// Each PE owns a band of rows plus a halo row above and below, in two
// symmetric arrays a and a_new that swap roles every iteration. After its
// sweep a PE puts its first row into the upper neighbour's lower halo and its
// last row into the lower neighbour's upper halo with shmem.PutSignal,
// setting the neighbour's signal word to the iteration number; before the
// next sweep it waits with SignalWaitUntil(..., CmpGE, iteration) for both
// of its own halos (nvshmem_float_put_signal_nbi with NVSHMEM_SIGNAL_SET and
// nvshmem_signal_wait_until(..., NVSHMEM_CMP_GE, iter) in the original).
//
// Why one signal word per halo is enough, with no barrier and no second
// signal (see step for the proof): a PE writes into a neighbour's array X
// in iteration k only after it saw the neighbour's signal for iteration k-1,
// which the neighbour raises after its sweep k-1 — its last read of X's
// halos before the new ones are due.
//
// Each PE's sweep runs on runtime.GOMAXPROCS(0) goroutines, each owning a
// contiguous band of rows. The parallel result is gathered to PE 0 with
// shmem.Get and compared element by element with the reference (|diff| >
// 1e-8 fails, as in the original): both do the same float32 operations in
// the same order, so they agree bitwise. On a mismatch PE 0 prints the first
// bad element and every PE exits 1.
//
// Output (PE 0):
//
//	Single PE jacobi relaxation: 1000 iterations on 1536 x 1536 mesh with norm check every 1 iterations
//	    0, 9.794769
//	  100, 0.274754
//	  ...
//	Jacobi relaxation: 1000 iterations on 1536 x 1536 mesh
//	    0, 9.794769
//	  ...
//	Num PEs: 4
//	1536x1536: 1 PE:   3.9830 s, 4 PEs:   4.0281 s, speedup:     0.99, efficiency:    24.72
//
// With -csv only one line: goshmem-cpu, nx, ny, niter, nccheck, npes, 1, parallel s, 1-PE s.
package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

type config struct {
	nx, ny, niter, nccheck int
	csv                    bool
	workers                int // goroutines per PE; 0: GOMAXPROCS
}

func main() {
	var cfg config
	flag.IntVar(&cfg.nx, "nx", 1536, "columns of the mesh")
	flag.IntVar(&cfg.ny, "ny", 1536, "rows of the mesh")
	flag.IntVar(&cfg.niter, "niter", 1000, "iterations")
	flag.IntVar(&cfg.nccheck, "nccheck", 1, "compute the norm (and test for convergence) every nccheck iterations")
	flag.BoolVar(&cfg.csv, "csv", false, "print one CSV line instead of the report")
	flag.IntVar(&cfg.workers, "workers", 0, "goroutines per PE (0: GOMAXPROCS)")
	flag.Parse()
	code, err := run(cfg, os.Stdout)
	if err != nil {
		fmt.Fprintln(os.Stderr, "jacobi-cpu:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// run runs the reference and the distributed solver and returns the exit
// code: 0 when the results agree, 1 when they do not.
func run(cfg config, w io.Writer) (int, error) {
	if cfg.nx < 3 || cfg.ny < 2 || cfg.niter < 0 || cfg.nccheck < 1 {
		return 1, fmt.Errorf("need -nx >= 3, -ny >= 2, -niter >= 0, -nccheck >= 1 (got %d, %d, %d, %d)",
			cfg.nx, cfg.ny, cfg.niter, cfg.nccheck)
	}
	if err := shmem.Init(); err != nil {
		return 1, err
	}
	me, npes := shmem.MyPE(), shmem.NPEs()
	if cfg.ny < npes {
		return 1, fmt.Errorf("-ny %d is smaller than the %d PEs: every PE needs a row", cfg.ny, npes)
	}
	nx, ny := cfg.nx, cfg.ny
	workers := newPool(cfg.workers)
	defer workers.close()

	// The 1-PE reference, on PE 0 only.
	var ref []float32
	var refIters int
	var serial float64
	if me == 0 {
		var printNorm func(int, float64)
		if !cfg.csv {
			fmt.Fprintf(w, "Single PE jacobi relaxation: %d iterations on %d x %d mesh with norm check every %d iterations\n",
				cfg.niter, ny, nx, cfg.nccheck)
			printNorm = func(iter int, norm float64) { fmt.Fprintf(w, "%5d, %0.6f\n", iter, norm) }
		}
		ref, refIters, serial = singlePE(workers, nx, ny, cfg.niter, cfg.nccheck, printNorm)
	}
	if err := shmem.BarrierAll(); err != nil {
		return 1, err
	}

	s := newSplit(ny, npes)
	d, err := newDomain(s, nx, ny)
	if err != nil {
		return 1, err
	}
	if me == 0 && !cfg.csv {
		fmt.Fprintf(w, "Jacobi relaxation: %d iterations on %d x %d mesh\n", cfg.niter, ny, nx)
	}
	if err := shmem.BarrierAll(); err != nil {
		return 1, err
	}
	start := time.Now()
	iters, err := d.solve(workers, cfg, w)
	if err != nil {
		return 1, err
	}
	if err := shmem.BarrierAll(); err != nil {
		return 1, err
	}
	parallel := time.Since(start).Seconds()

	// Gather to PE 0 and compare with the reference.
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
			fmt.Fprintf(os.Stderr, "ERROR: %d PEs ran %d iterations, the reference %d\n", npes, iters, refIters)
			ok = 0
		}
		if iy, ix, bad := compare(ref, got, nx, ny); bad {
			fmt.Fprintf(os.Stderr, "ERROR: a[%d * %d + %d] = %f does not match %f (reference)\n",
				iy, nx, ix, got[iy*nx+ix], ref[(iy+1)*nx+ix])
			ok = 0
		}
	}
	// Everyone learns the verdict, so every PE exits the same way.
	d.flag.Local()[0] = ok
	if err := shmem.Broadcast(shmem.TeamWorld, d.verdict, d.flag, 1, 0); err != nil {
		return 1, err
	}
	ok = d.verdict.Local()[0]
	if me == 0 && ok == 1 {
		if cfg.csv {
			fmt.Fprintf(w, "goshmem-cpu, %d, %d, %d, %d, %d, 1, %f, %f\n", nx, ny, cfg.niter, cfg.nccheck, npes, parallel, serial)
		} else {
			fmt.Fprintf(w, "Num PEs: %d\n", npes)
			fmt.Fprintf(w, "%dx%d: 1 PE: %8.4f s, %d PEs: %8.4f s, speedup: %8.2f, efficiency: %8.2f\n",
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

// compare checks the gathered mesh (ny rows, no halos) against the
// reference (ny+2 rows, row 0 a halo) on the interior columns, with the
// original's test |ref - got| > tol. It returns the first bad element.
func compare(ref, got []float32, nx, ny int) (iy, ix int, bad bool) {
	for iy := 0; iy < ny; iy++ {
		for ix := 1; ix < nx-1; ix++ {
			// Compare in float64: a NaN on either side counts as a mismatch.
			if !(math.Abs(float64(ref[(iy+1)*nx+ix])-float64(got[iy*nx+ix])) <= tol) {
				return iy, ix, true
			}
		}
	}
	return 0, 0, false
}

// domain is this PE's part of the distributed mesh.
type domain struct {
	me, npes   int
	nx, rows   int // columns; rows owned by this PE
	top, below int // the neighbours (periodic): upper and lower
	topRows    int // rows owned by the upper neighbour (its lower halo is row topRows+1)
	// a[0], a[1]: the two meshes (a and a_new swap every iteration), each
	// with chunkHigh+2 rows on every PE so the allocation is symmetric: row
	// 0 is the upper halo, rows 1..rows are owned, row rows+1 the lower halo.
	a [2]shmem.Array[float32]
	// sig[0]: the iteration whose upper halo has arrived (set by the upper
	// neighbour); sig[1]: the same for the lower halo (set by the lower
	// neighbour). Two words, so that with 2 PEs (upper = lower) or 1 PE
	// (itself) the two halos are still told apart.
	sig           shmem.Array[uint64]
	norm          shmem.Array[float64] // this PE's sum of squares, then the global sum
	flag, verdict shmem.Array[int32]   // PE 0's verdict and its broadcast copy
}

const (
	sigUpper = 0
	sigLower = 1
)

func newDomain(s split, nx, ny int) (*domain, error) {
	me, npes := shmem.MyPE(), shmem.NPEs()
	d := &domain{
		me: me, npes: npes, nx: nx, rows: s.rows(me),
		top: (me - 1 + npes) % npes, below: (me + 1) % npes,
	}
	d.topRows = s.rows(d.top)
	var err error
	n := nx * (s.chunkHigh + 2)
	for i := range d.a {
		if d.a[i], err = shmem.Alloc[float32](n); err != nil {
			return nil, err
		}
		initBoundaries(d.a[i].Local(), nx, d.rows, s.first(me), ny)
	}
	if d.sig, err = shmem.Alloc[uint64](2); err != nil {
		return nil, err
	}
	if d.norm, err = shmem.Alloc[float64](1); err != nil {
		return nil, err
	}
	if d.flag, err = shmem.Alloc[int32](1); err != nil {
		return nil, err
	}
	if d.verdict, err = shmem.Alloc[int32](1); err != nil {
		return nil, err
	}
	return d, nil
}

func (d *domain) free() error {
	for _, f := range []func() error{d.a[0].Free, d.a[1].Free, d.sig.Free, d.norm.Free, d.flag.Free, d.verdict.Free} {
		if err := f(); err != nil {
			return err
		}
	}
	return nil
}

// solve runs the distributed iterations and returns how many ran; the
// result is in d.a[iters%2].
func (d *domain) solve(p *pool, cfg config, w io.Writer) (int, error) {
	local := [2][]float32{d.a[0].Local(), d.a[1].Local()}
	norm := 1.0
	iter := 0
	for ; norm > tol && iter < cfg.niter; iter++ {
		sum, err := d.step(p, local, iter)
		if err != nil {
			return iter, err
		}
		if iter%cfg.nccheck == 0 || (!cfg.csv && iter%100 == 0) {
			d.norm.Local()[0] = sum
			if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, d.norm, d.norm, 1); err != nil {
				return iter, err
			}
			norm = math.Sqrt(d.norm.Local()[0])
			if d.me == 0 && !cfg.csv && iter%100 == 0 {
				fmt.Fprintf(w, "%5d, %0.6f\n", iter, norm)
			}
		}
	}
	return iter, nil
}

// step is iteration iter (0-based; its signal value is k = iter+1): it reads
// a = d.a[iter%2] and writes a_new = d.a[k%2], and returns this PE's sum of
// squared changes.
//
// The halo protocol, and why it is race-free with one signal word per halo:
//
//  1. Before reading a's halos, wait until sig[upper] and sig[lower] are
//     >= iter: the neighbours have put their rows of iteration iter (the
//     rows now in their a) into our a's halos. (For iter = 0 the halos are
//     the initial zeros on both sides: nothing to wait for.)
//  2. Sweep: owned rows of a_new from a.
//  3. Put our first and last row of a_new into the neighbours' a_new halos,
//     signal k.
//
// Race 1, overwriting a halo still being read: our put in step 3 goes into
// the neighbour's d.a[(iter+1)%2], whose halos the neighbour last read in
// its iteration iter-1 (as its a). We passed step 1 of this iteration, so we
// saw the neighbour's signal >= iter, which it raised at the end of its
// iteration iter-1, after that sweep. So the put cannot land early, and no
// barrier or second ("halo free") signal is needed: double buffering plus
// waiting on both neighbours before every sweep gives the back-pressure.
// Race 2, a neighbour running ahead: it can start iteration iter+1 only
// after our signal k, i.e. after our sweep; it then writes the halos of our
// d.a[(iter+2)%2] = a, which we no longer read. A neighbour is never more
// than one iteration ahead, so SignalSet with the iteration number cannot
// skip a value we still wait for (and CmpGE accepts k+1 for k).
// Race 3, the signal overtaking the data: PutSignal orders the signal after
// the data (release/acquire), so seeing the signal means seeing the row.
func (d *domain) step(p *pool, local [2][]float32, iter int) (float64, error) {
	k := uint64(iter + 1)
	cur, nxt := iter%2, (iter+1)%2
	if iter > 0 {
		if _, err := shmem.SignalWaitUntil(d.sig, sigUpper, shmem.CmpGE, uint64(iter)); err != nil {
			return 0, err
		}
		if _, err := shmem.SignalWaitUntil(d.sig, sigLower, shmem.CmpGE, uint64(iter)); err != nil {
			return 0, err
		}
	}
	nx, rows := d.nx, d.rows
	sum := p.sweep(local[nxt], local[cur], nx, 1, rows+1)
	// Our first row -> the upper neighbour's lower halo (row topRows+1).
	if err := shmem.PutSignal(d.a[nxt], (d.topRows+1)*nx, local[nxt][nx:2*nx],
		d.sig, sigLower, k, shmem.SignalSet, d.top); err != nil {
		return 0, err
	}
	// Our last row -> the lower neighbour's upper halo (row 0).
	if err := shmem.PutSignal(d.a[nxt], 0, local[nxt][rows*nx:(rows+1)*nx],
		d.sig, sigUpper, k, shmem.SignalSet, d.below); err != nil {
		return 0, err
	}
	return sum, nil
}
