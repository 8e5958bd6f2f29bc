package main

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// The lock row is timed the same way by oshbench: its round count is
// goshmem-perf's.
func TestLockRoundsMatchOshbench(t *testing.T) {
	src, err := os.ReadFile("../../bench/oshmem/oshbench.c")
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^#define LOCK_ROUNDS (\d+)`).FindSubmatch(src)
	require.NotNil(t, m, "oshbench.c defines LOCK_ROUNDS")
	n, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	require.Equal(t, lockRounds, n)
}
