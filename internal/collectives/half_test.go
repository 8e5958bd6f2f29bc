package collectives

import (
	"fmt"
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/elem"
)

// halfOf rounds f to half kind T; toF32 widens.
func halfOf[T elem.Float16 | elem.BFloat16](f float32) T {
	var z T
	if _, ok := any(z).(elem.Float16); ok {
		return T(elem.Float16FromFloat32(f))
	}
	return T(elem.BFloat16FromFloat32(f))
}

func toF32[T elem.Float16 | elem.BFloat16](h T) float32 {
	if _, ok := any(h).(elem.Float16); ok {
		return elem.Float16(h).Float32()
	}
	return elem.BFloat16(h).Float32()
}

// halfValue is member i's element k: big and small values mixed so that a
// sum rounded at every step differs from the float32 sum rounded once
// (member 0 contributes 2048 or 256 at every 4th element, the others ones).
func halfValue[T elem.Float16 | elem.BFloat16](op Op, i, k int) T {
	switch op {
	case OpProd:
		return halfOf[T](float32((i+k)%3+1) * 1.125)
	case OpMin, OpMax:
		return halfOf[T](float32((i*37+k*11)%251-100) / 8)
	}
	if i == 0 && k%4 == 0 {
		return halfOf[T](2048)
	}
	return halfOf[T](float32(1 + (i+k)%3))
}

// halfFold is the reference: float32 fold over members 0..last in order,
// rounded once.
func halfFold[T elem.Float16 | elem.BFloat16](op Op, last, k int) T {
	acc := toF32(halfValue[T](op, 0, k))
	for i := 1; i <= last; i++ {
		v := toF32(halfValue[T](op, i, k))
		switch op {
		case OpSum:
			acc += v
		case OpProd:
			acc *= v
		case OpMin:
			acc = min(acc, v)
		case OpMax:
			acc = max(acc, v)
		}
	}
	return halfOf[T](acc)
}

func testReduceHalf[T elem.Float16 | elem.BFloat16](t *testing.T, n int, direct bool) {
	counts := []int{0, 1, 13, TeamScratchSize/2 + 3, 3*halfBlock + 17}
	spmdPath(t, n, direct, func(c Comm, fc *fakeComm, world *Team) error {
		for _, tm := range teamsOf(t, c, world) {
			for _, op := range []Op{OpSum, OpProd, OpMin, OpMax} {
				for _, cnt := range counts {
					for _, inPlace := range []bool{false, true} {
						what := fmt.Sprintf("%s %v %v, PE %d, n %d, in place %v", elem.Name[T](), op, tm, fc.me, cnt, inPlace)
						fill(fc, srcOff, cnt+1, func(k int) T { return halfValue[T](op, tm.Me, k) })
						dst := uint64(dstOff)
						if inPlace {
							dst = srcOff
						} else {
							fill(fc, dst, cnt+1, func(int) T { return 0x5555 })
						}
						require.NoError(t, Reduce[T](c, tm, op, dst, srcOff, cnt), what)
						got := view[T](fc, dst, cnt+1)
						bad := 0
						for k := 0; k < cnt && bad < 3; k++ {
							if want := halfFold[T](op, tm.Size-1, k); got[k] != want {
								assert.Equal(t, want, got[k], "%s: element %d (%v, want %v)", what, k, toF32(got[k]), toF32(want))
								bad++
							}
						}
						past := T(0x5555)
						if inPlace {
							past = halfValue[T](op, tm.Me, cnt)
						}
						assert.Equal(t, past, got[cnt], what+": past the end")
						require.NoError(t, tm.Sync(c))
					}
				}
			}
		}
		return nil
	})
}

func testScanHalf[T elem.Float16 | elem.BFloat16](t *testing.T, n int, direct bool) {
	counts := []int{0, 1, 13, TeamScratchSize/2 + 5, 3*halfBlock + 1}
	spmdPath(t, n, direct, func(c Comm, fc *fakeComm, world *Team) error {
		for _, tm := range teamsOf(t, c, world) {
			for _, exclusive := range []bool{false, true} {
				for _, cnt := range counts {
					for _, inPlace := range []bool{false, true} {
						what := fmt.Sprintf("%s %v, PE %d, n %d, exclusive %v, in place %v", elem.Name[T](), tm, fc.me, cnt, exclusive, inPlace)
						fill(fc, srcOff, cnt+1, func(k int) T { return halfValue[T](OpSum, tm.Me, k) })
						dst := uint64(dstOff)
						if inPlace {
							dst = srcOff
						} else {
							fill(fc, dst, cnt+1, func(int) T { return 0x5555 })
						}
						require.NoError(t, Scan[T](c, tm, exclusive, dst, srcOff, cnt), what)
						last := tm.Me
						if exclusive {
							last--
						}
						got := view[T](fc, dst, cnt+1)
						bad := 0
						for k := 0; k < cnt && bad < 3; k++ {
							want := T(0) // +0: the exclusive scan's identity on member 0
							if last >= 0 {
								want = halfFold[T](OpSum, last, k)
							}
							if got[k] != want {
								assert.Equal(t, want, got[k], "%s: element %d", what, k)
								bad++
							}
						}
						past := T(0x5555)
						if inPlace {
							past = halfValue[T](OpSum, tm.Me, cnt)
						}
						assert.Equal(t, past, got[cnt], what+": past the end")
						require.NoError(t, tm.Sync(c))
					}
				}
			}
		}
		return nil
	})
}

func TestReduceScanHalf(t *testing.T) {
	for _, p := range paths {
		for _, n := range []int{1, 2, 3, 5, 8} {
			t.Run(fmt.Sprintf("%s/%d/Float16", p.name, n), func(t *testing.T) {
				testReduceHalf[elem.Float16](t, n, p.direct)
				testScanHalf[elem.Float16](t, n, p.direct)
			})
			t.Run(fmt.Sprintf("%s/%d/BFloat16", p.name, n), func(t *testing.T) {
				testReduceHalf[elem.BFloat16](t, n, p.direct)
				testScanHalf[elem.BFloat16](t, n, p.direct)
			})
		}
	}
}

// The reference rounds once; rounding every partial sum gives other bits
// for these values, so the tests above tell the two apart.
func TestHalfFoldRoundsOnce(t *testing.T) {
	stepwise := func(last int) elem.Float16 {
		acc := halfValue[elem.Float16](OpSum, 0, 0)
		for i := 1; i <= last; i++ {
			acc = elem.Float16FromFloat32(acc.Float32() + halfValue[elem.Float16](OpSum, i, 0).Float32())
		}
		return acc
	}
	// 2048 + 2 + 3 + 1 + 2: float32 2056 (exact in binary16); stepwise each
	// +2/+3/+1 at ulp 2 rounds: 2050, 2052 (2053 ties to even), 2052, 2054
	assert.Equal(t, float32(2056), halfFold[elem.Float16](OpSum, 4, 0).Float32())
	assert.NotEqual(t, halfFold[elem.Float16](OpSum, 4, 0), stepwise(4))
	// bfloat16 has 8 significant bits: 2048 + 1+2+3+1+... is lost stepwise entirely
	assert.Equal(t, float32(2048), elem.BFloat16FromFloat32(2048+2).Float32())
	assert.Equal(t, float32(2064), halfFold[elem.BFloat16](OpSum, 7, 0).Float32(), "2048 + 14 rounds to 2064 (ulp 16)")
	assert.True(t, math.Signbit(float64(elem.Float16(0x8000).Float32())))
}
