package cxi

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

// RawRearm runs both loops to the end and counts what it timed.
func TestRawRearm(t *testing.T) {
	reset, raised, err := RawRearm(0, Config{}, 2, 50)
	require.NoError(t, err)
	assert.Equal(t, 50, reset.Epochs)
	assert.Equal(t, 50, reset.Resets, "the reset loop resets every epoch")
	assert.Equal(t, 50, raised.Epochs)
	assert.Equal(t, 1, raised.Resets, "raised thresholds: one reset at the start (2 x 50 < 2047)")
	assert.Positive(t, reset.Set)
	assert.Positive(t, raised.Queue)
	t.Logf("raw re-arm per record: reset %v (set %v, queue %v per epoch), raised %v",
		reset.PerRecord(2), reset.Set/50, reset.Queue/50, raised.PerRecord(2))

	_, _, err = RawRearm(3, Config{}, 0, 1)
	require.ErrorIs(t, err, errs.ErrInvalidArgument)
	assert.Contains(t, err.Error(), "PE 3")
}

func TestLogHistMedian(t *testing.T) {
	var h logHist
	assert.Zero(t, h.median())
	for _, ns := range []int64{3, 1000, 1000, 1010, 5_000_000} {
		h.add(ns)
	}
	m := h.median()
	assert.InDelta(t, 1000, float64(m), 1000*0.1, "median %v", m)
	h = logHist{}
	h.add(5)
	assert.Equal(t, int64(5), int64(h.median()))
}
