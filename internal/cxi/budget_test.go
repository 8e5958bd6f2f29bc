package cxi

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// Barrier instances that fit on Slingshot 11 (256 DWQ entries, counter
// range 2047) at representative scales.
func TestTable2(t *testing.T) {
	for _, tc := range []struct {
		p, dwqPerBarrier, cntrIncPerBarrier, maxPrestaged int
	}{
		{64, 6, 12, 42},
		{256, 8, 16, 32},
		{1024, 10, 20, 25},
		{4096, 12, 24, 21},
	} {
		r := Rounds(tc.p)
		assert.Equal(t, tc.dwqPerBarrier, r, "P=%d: DWQ entries per barrier", tc.p)
		assert.Equal(t, tc.cntrIncPerBarrier, Slingshot11.CountersPerOp*r, "P=%d: counter increments per barrier", tc.p)
		assert.Equal(t, tc.maxPrestaged, MaxPrestaged(Slingshot11, tc.p), "P=%d: max pre-staged", tc.p)
		// The double-buffered monitor keeps 2R armed: far inside the budget.
		assert.LessOrEqual(t, 2*r, Slingshot11.DWQEntries)
	}
	assert.Equal(t, 0, Rounds(1))
	assert.Equal(t, 1, Rounds(2))
	assert.Equal(t, 2, Rounds(3))
	assert.Equal(t, 30, Rounds(1<<30), "P = 10^9 needs R = 30")
}
