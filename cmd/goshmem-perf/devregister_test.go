//go:build !nostream

package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestRegIters(t *testing.T) {
	assert.Equal(t, 1000, regIters(8<<10))
	assert.Equal(t, 256, regIters(1<<20))
	assert.Equal(t, 20, regIters(64<<20))
	for _, k := range []int{0, 1, 255} {
		assert.NotEqual(t, regPattern(1, k), regPattern(2, k), "the two sources differ at byte %d", k)
	}
}
