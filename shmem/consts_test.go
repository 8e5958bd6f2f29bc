package shmem_test

import (
	"bufio"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// headerDefines returns the integer #defines of include/goshmem/defs.h
// (name -> value), read from the file so the test fails when either side
// changes alone.
func headerDefines(t *testing.T) map[string]int64 {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "include", "goshmem", "defs.h"))
	require.NoError(t, err)
	defer f.Close()
	re := regexp.MustCompile(`^#define\s+(GOSHMEM\w*)\s+\(?\s*(?:\(\w+\))?\s*(-?\d+)\s*\)?\s*(?:/\*.*)?$`)
	defs := map[string]int64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			v, err := strconv.ParseInt(m[2], 10, 64)
			require.NoError(t, err, m[0])
			defs[m[1]] = v
		}
	}
	require.NoError(t, sc.Err())
	return defs
}

// Constants that cross the host/device boundary equal the header's: a Cmp
// or SignalOp passed from Go to a kernel means the same thing there.
func TestConstantsMatchDeviceHeader(t *testing.T) {
	defs := headerDefines(t)
	cases := []struct {
		name string
		goV  int64
	}{
		{"GOSHMEM_CMP_EQ", int64(shmem.CmpEQ)},
		{"GOSHMEM_CMP_NE", int64(shmem.CmpNE)},
		{"GOSHMEM_CMP_GT", int64(shmem.CmpGT)},
		{"GOSHMEM_CMP_LE", int64(shmem.CmpLE)},
		{"GOSHMEM_CMP_LT", int64(shmem.CmpLT)},
		{"GOSHMEM_CMP_GE", int64(shmem.CmpGE)},
		{"GOSHMEM_SIGNAL_SET", int64(shmem.SignalSet)},
		{"GOSHMEM_SIGNAL_ADD", int64(shmem.SignalAdd)},
		{"GOSHMEM_TEAM_WORLD", int64(shmem.DeviceTeamWorld)},
		{"GOSHMEM_TEAM_SHARED", int64(shmem.DeviceTeamShared)},
		{"GOSHMEM_TEAM_NODE", int64(shmem.DeviceTeamNode)},
	}
	for _, c := range cases {
		v, ok := defs[c.name]
		if assert.True(t, ok, "%s not found in defs.h", c.name) {
			assert.Equal(t, v, c.goV, "%s: header %d, Go %d", c.name, v, c.goV)
		}
	}
	// NVSHMEM's values (Ref: NVSHMEM 3.x nvshmem_constants.h, nvshmem_common_transport.h)
	assert.Equal(t, int64(5), defs["GOSHMEM_CMP_GE"])
	assert.Equal(t, int64(3), defs["GOSHMEM_CMP_LE"])
	assert.Equal(t, int64(9), defs["GOSHMEM_SIGNAL_SET"])
	assert.Equal(t, int64(10), defs["GOSHMEM_SIGNAL_ADD"])
	// every comparison below the sentinel is valid in Go, none at or above
	assert.Equal(t, int64(6), defs["GOSHMEM_CMP_SENTINEL"])
	for c := shmem.Cmp(0); c < shmem.Cmp(defs["GOSHMEM_CMP_SENTINEL"]); c++ {
		assert.NotContains(t, c.String(), "Cmp(", "Cmp %d has a name", int(c))
	}
	assert.Equal(t, "Cmp(6)", shmem.Cmp(6).String())
}
