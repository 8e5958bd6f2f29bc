package main

import (
	"bytes"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// naive is the problem written out directly on a 2D mesh, without halos,
// pools or bands: the periodic neighbours come from (iy±1) mod ny.
func naive(nx, ny, niter int) [][]float32 {
	a := make([][]float32, ny)
	aNew := make([][]float32, ny)
	for iy := range a {
		a[iy] = make([]float32, nx)
		aNew[iy] = make([]float32, nx)
		y0 := float32(math.Sin(2.0 * float64(float32(math.Pi)) * float64(iy) / float64(ny-1)))
		a[iy][0], a[iy][nx-1] = y0, y0
		aNew[iy][0], aNew[iy][nx-1] = y0, y0
	}
	for it := 0; it < niter; it++ {
		for iy := 0; iy < ny; iy++ {
			up, dn := a[(iy-1+ny)%ny], a[(iy+1)%ny]
			for ix := 1; ix < nx-1; ix++ {
				aNew[iy][ix] = 0.25 * (a[iy][ix+1] + a[iy][ix-1] + dn[ix] + up[ix])
			}
		}
		a, aNew = aNew, a
	}
	return a
}

func TestSinglePEMatchesNaive(t *testing.T) {
	for _, tc := range []struct{ nx, ny, niter, workers int }{
		{3, 2, 5, 1}, {17, 9, 50, 2}, {64, 33, 120, 3}, {100, 7, 200, 8},
	} {
		p := newPool(tc.workers)
		got, iters, _ := singlePE(p, tc.nx, tc.ny, tc.niter, 1, nil)
		p.close()
		require.Equal(t, tc.niter, iters)
		want := naive(tc.nx, tc.ny, tc.niter)
		for iy := 0; iy < tc.ny; iy++ {
			for ix := 0; ix < tc.nx; ix++ {
				// Bitwise: the same float32 operations in the same order.
				require.Equal(t, math.Float32bits(want[iy][ix]), math.Float32bits(got[(iy+1)*tc.nx+ix]),
					"%dx%d after %d: a[%d][%d]", tc.ny, tc.nx, tc.niter, iy, ix)
			}
		}
	}
}

func TestSplit(t *testing.T) {
	for _, tc := range []struct{ ny, npes int }{{8, 1}, {8, 2}, {8, 3}, {10, 4}, {7, 7}, {1000, 6}} {
		s := newSplit(tc.ny, tc.npes)
		next := 0
		for pe := 0; pe < tc.npes; pe++ {
			assert.Equal(t, next, s.first(pe), "ny %d npes %d pe %d", tc.ny, tc.npes, pe)
			assert.GreaterOrEqual(t, s.rows(pe), 1)
			assert.LessOrEqual(t, s.rows(pe), s.chunkHigh)
			next += s.rows(pe)
		}
		assert.Equal(t, tc.ny, next, "ny %d npes %d", tc.ny, tc.npes)
	}
}

// TestRun runs the whole program as a 1-PE job (no mpirun): the symmetric
// heap, PutSignal to itself, Reduce, Get and the comparison.
func TestRun(t *testing.T) {
	var out bytes.Buffer
	code, err := run(config{nx: 40, ny: 24, niter: 250, nccheck: 1}, &out)
	require.NoError(t, err)
	assert.Equal(t, 0, code, out.String())
	s := out.String()
	assert.Contains(t, s, "Single PE jacobi relaxation: 250 iterations on 24 x 40 mesh")
	assert.Contains(t, s, "Jacobi relaxation: 250 iterations on 24 x 40 mesh")
	assert.Contains(t, s, "Num PEs: 1\n")
	assert.Equal(t, 2, strings.Count(s, "  200, "), s)
}

func BenchmarkSweep(b *testing.B) {
	const nx, rows = 2048, 256
	a := make([]float32, nx*(rows+2))
	aNew := make([]float32, nx*(rows+2))
	for i := range a {
		a[i] = float32(i%97) / 97
	}
	b.Run("rows", func(b *testing.B) {
		b.SetBytes(int64(nx * rows * 4))
		for b.Loop() {
			sweepRows(aNew, a, nx, 1, rows+1)
		}
	})
	p := newPool(0)
	defer p.close()
	b.Run("pool", func(b *testing.B) {
		b.SetBytes(int64(nx * rows * 4))
		for b.Loop() {
			p.sweep(aNew, a, nx, 1, rows+1)
		}
	})
	b.Run("waitgroup", func(b *testing.B) {
		b.SetBytes(int64(nx * rows * 4))
		for b.Loop() {
			sweepWaitGroup(p.workers, aNew, a, nx, 1, rows+1)
		}
	})
}
