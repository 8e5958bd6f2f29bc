package cxi

import (
	"math/bits"

	"github.com/goshmem/goshmem/internal/errs"
)

// Slingshot11 is the default budget: HPE Slingshot 11's limits.
var Slingshot11 = Budget{DWQEntries: 256, CounterMax: 2047, CountersPerOp: 2}

// Rounds is R = ceil(log2 P), the rounds of a dissemination barrier over P
// ranks (0 for P <= 1).
func Rounds(p int) int {
	if p <= 1 {
		return 0
	}
	return bits.Len(uint(p - 1))
}

// MaxPrestaged is how many barrier instances over P ranks could be
// pre-staged at once within b: each takes R records and 2R counter
// increments, so min(floor(DWQ/R), floor(CounterMax/(2R))).
func MaxPrestaged(b Budget, p int) int {
	r := Rounds(p)
	if r == 0 {
		return 0
	}
	return min(b.DWQEntries/r, int(b.CounterMax)/(b.CountersPerOp*r))
}

// checkBudget validates a budget for a barrier of R rounds with two slots (and
// active messages, whose instance counts 2 on its trigger counter).
func checkBudget(b Budget, pe, rounds int, am bool) error {
	if b.DWQEntries <= 0 || b.CounterMax == 0 || b.CountersPerOp <= 0 {
		return errs.New(errs.ErrInvalidArgument, pe, "cxi: budget", "%+v: every field must be positive", b)
	}
	if uint64(rounds) > b.CounterMax {
		return errs.Hint(errs.ErrInvalidArgument, "raise Budget.CounterMax", pe, "cxi: budget",
			"a barrier of %d rounds needs trigger thresholds up to %d > CounterMax %d", rounds, rounds, b.CounterMax)
	}
	if am && b.CounterMax < 2 {
		return errs.Hint(errs.ErrInvalidArgument, "raise Budget.CounterMax", pe, "cxi: budget",
			"an active message needs trigger thresholds up to 2 > CounterMax %d", b.CounterMax)
	}
	return nil
}
