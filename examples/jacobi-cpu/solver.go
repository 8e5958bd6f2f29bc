package main

import (
	"math"
	"runtime"
	"sync"
	"time"
)

// tol is the original's tolerance, for the norm (stop once the L2 norm is
// at or below it) and for the element-wise check against the reference.
const tol = 1.0e-8

// pi is the original's `const real PI = 2.0 * std::asin(1.0)` with real =
// float: π rounded to float32, then used in double arithmetic.
var pi = float64(float32(2 * math.Asin(1)))

// boundary is the Dirichlet value of the left and right columns at global
// row iy of an ny-row mesh: sin(2π·iy/(ny-1)), computed in double and
// rounded to float as the original's initialize_boundaries does.
func boundary(iy, ny int) float32 {
	return float32(math.Sin(2.0 * pi * float64(iy) / float64(ny-1)))
}

// initBoundaries sets the Dirichlet columns of rows 1..rows of a (row 0 and
// row rows+1 are halos), whose first row is global row offset.
func initBoundaries(a []float32, nx, rows, offset, ny int) {
	for iy := 0; iy < rows; iy++ {
		y0 := boundary(offset+iy, ny)
		a[(iy+1)*nx] = y0
		a[(iy+1)*nx+nx-1] = y0
	}
}

// sweepRow computes one row of a_new from the row above (up), the row itself
// (cur) and the row below (dn) of a, for the interior columns 1..nx-2, and
// returns the row's sum of squared changes. The arithmetic is the original's
// jacobi_kernel, operand for operand: ((right + left) + below) + above in
// float32, times 0.25. Every PE and the single-PE reference call this one
// function, so the results are bitwise equal however the rows are split.
func sweepRow(out, up, cur, dn []float32) float64 {
	nx := len(cur)
	if nx < 3 {
		return 0
	}
	out, up, dn = out[:nx], up[:nx], dn[:nx]
	var sum float64
	for ix := 1; ix < nx-1; ix++ {
		v := float32(0.25) * (cur[ix+1] + cur[ix-1] + dn[ix] + up[ix])
		out[ix] = v
		r := v - cur[ix]
		sum += float64(r * r)
	}
	return sum
}

// sweepRows runs sweepRow over rows [lo, hi) of a (rows lo-1 and hi must
// exist: halos or owned rows) and returns their sum of squared changes.
func sweepRows(aNew, a []float32, nx, lo, hi int) float64 {
	var sum float64
	for iy := lo; iy < hi; iy++ {
		sum += sweepRow(aNew[iy*nx:(iy+1)*nx], a[(iy-1)*nx:iy*nx], a[iy*nx:(iy+1)*nx], a[(iy+1)*nx:(iy+2)*nx])
	}
	return sum
}

// pool is a fixed set of worker goroutines that split a sweep's rows among
// them. A persistent pool and a sync.WaitGroup with fresh goroutines per
// sweep perform alike (a sweep is milliseconds; either dispatch is
// microseconds); the pool keeps the hot loop free of allocations.
type pool struct {
	workers int
	start   []chan job
	done    chan float64
	partial []float64
}

type job struct {
	aNew, a    []float32
	nx, lo, hi int
}

// newPool starts workers goroutines (runtime.GOMAXPROCS(0) when workers < 1).
func newPool(workers int) *pool {
	if workers < 1 {
		workers = runtime.GOMAXPROCS(0)
	}
	p := &pool{workers: workers, start: make([]chan job, workers), done: make(chan float64, workers),
		partial: make([]float64, workers)}
	for w := range p.start {
		p.start[w] = make(chan job, 1)
		go func(w int) {
			for j := range p.start[w] {
				p.partial[w] = sweepRows(j.aNew, j.a, j.nx, j.lo, j.hi)
				p.done <- 0
			}
		}(w)
	}
	return p
}

// sweep computes rows [lo, hi) of aNew from a, split into one contiguous
// band per worker, and returns the sum of squared changes. The partial sums
// are added in band order, so the result does not depend on scheduling.
func (p *pool) sweep(aNew, a []float32, nx, lo, hi int) float64 {
	rows := hi - lo
	for w := range p.start {
		blo := lo + rows*w/p.workers
		bhi := lo + rows*(w+1)/p.workers
		p.start[w] <- job{aNew: aNew, a: a, nx: nx, lo: blo, hi: bhi}
	}
	for range p.start {
		<-p.done
	}
	var sum float64
	for _, s := range p.partial {
		sum += s
	}
	return sum
}

// close stops the workers.
func (p *pool) close() {
	for _, c := range p.start {
		close(c)
	}
}

// sweepWaitGroup is pool.sweep with fresh goroutines and a sync.WaitGroup
// per call (kept for the benchmark that compares the two).
func sweepWaitGroup(workers int, aNew, a []float32, nx, lo, hi int) float64 {
	partial := make([]float64, workers)
	rows := hi - lo
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			partial[w] = sweepRows(aNew, a, nx, lo+rows*w/workers, lo+rows*(w+1)/workers)
		}(w)
	}
	wg.Wait()
	var sum float64
	for _, s := range partial {
		sum += s
	}
	return sum
}

// singlePE is the reference: the whole ny x nx mesh in plain Go memory,
// with one halo row above and below (ny+2 rows) that is refreshed from the
// opposite edge before every sweep (periodic top and bottom). It returns the
// final mesh (rows 1..ny are global rows 0..ny-1), the iterations run and
// the seconds taken. printNorm, when non-nil, is called every 100 iterations.
func singlePE(p *pool, nx, ny, niter, nccheck int, printNorm func(iter int, norm float64)) (mesh []float32, iters int, seconds float64) {
	a := make([]float32, nx*(ny+2))
	aNew := make([]float32, nx*(ny+2))
	initBoundaries(a, nx, ny, 0, ny)
	initBoundaries(aNew, nx, ny, 0, ny)
	start := time.Now()
	norm := 1.0
	iter := 0
	for ; norm > tol && iter < niter; iter++ {
		copy(a[0:nx], a[ny*nx:(ny+1)*nx])        // upper halo <- last row
		copy(a[(ny+1)*nx:(ny+2)*nx], a[nx:2*nx]) // lower halo <- first row
		sum := p.sweep(aNew, a, nx, 1, ny+1)
		check := iter%nccheck == 0
		if check || (printNorm != nil && iter%100 == 0) {
			norm = math.Sqrt(sum)
			if printNorm != nil && iter%100 == 0 {
				printNorm(iter, norm)
			}
		}
		a, aNew = aNew, a
	}
	return a, iter, time.Since(start).Seconds()
}

// split is the original's row decomposition: ny rows over npes PEs, the
// first numLow PEs get chunkLow rows and the others chunkLow+1.
type split struct {
	chunkLow, chunkHigh, numLow int
}

func newSplit(ny, npes int) split {
	lo := ny / npes
	return split{chunkLow: lo, chunkHigh: lo + 1, numLow: npes*lo + npes - ny}
}

// rows is the number of rows PE pe owns.
func (s split) rows(pe int) int {
	if pe < s.numLow {
		return s.chunkLow
	}
	return s.chunkHigh
}

// first is the global row of PE pe's first owned row.
func (s split) first(pe int) int {
	if pe < s.numLow {
		return pe * s.chunkLow
	}
	return s.numLow*s.chunkLow + (pe-s.numLow)*s.chunkHigh
}
