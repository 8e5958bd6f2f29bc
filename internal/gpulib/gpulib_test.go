package gpulib

import (
	"errors"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

// The Go mirror of lib.h's values.
func TestABI(t *testing.T) {
	b, err := os.ReadFile("lib.h")
	require.NoError(t, err)
	defs := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (GOSHMEMI_LIB_\w+) (\d+)$`).FindAllStringSubmatch(string(b), -1) {
		v, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		defs[m[1]] = v
	}
	want := map[string]int{"GOSHMEMI_LIB_THREADS": Threads, "GOSHMEMI_LIB_NARGS": NArgs,
		"GOSHMEMI_LIB_CMP_EQ": CmpEQ, "GOSHMEMI_LIB_CMP_NE": CmpNE, "GOSHMEMI_LIB_CMP_GT": CmpGT,
		"GOSHMEMI_LIB_CMP_GE": CmpGE, "GOSHMEMI_LIB_CMP_LT": CmpLT, "GOSHMEMI_LIB_CMP_LE": CmpLE,
		"GOSHMEMI_LIB_SIGNAL_SET": SignalSet, "GOSHMEMI_LIB_SIGNAL_ADD": SignalAdd,
		"GOSHMEMI_LIB_MOVE_BROADCAST": MoveBroadcast, "GOSHMEMI_LIB_MOVE_FCOLLECT": MoveFCollect, "GOSHMEMI_LIB_MOVE_ALLTOALL": MoveAllToAll,
		"GOSHMEMI_LIB_ARG_FUSED": ArgFused, "GOSHMEMI_LIB_ABI": ABI}
	for i, op := range OpNames {
		want["GOSHMEMI_LIB_OP_"+strings.ToUpper(op)] = i
	}
	assert.Equal(t, want, defs)
}

// The registry: no image, an image for another ABI, then the right one.
func TestRegistry(t *testing.T) {
	t.Cleanup(Unregister)
	image := []byte{0x50, 0xed, 0x55, 0xba}
	for _, c := range []struct {
		name     string
		register func()
		want     string
	}{
		{"none", Unregister, `goshmem's kernel library is not in this program: add import _ "github.com/goshmem/goshmem/gpulib" to its main package`},
		{"other ABI", func() { Register(ABI+1, image) }, "has ABI 2, this github.com/goshmem/goshmem needs ABI 1: require the same version of both modules"},
		{"empty", func() { Register(ABI, nil) }, "is empty"},
		{"ok", func() { Register(ABI, image) }, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.register()
			got, err := Image()
			if c.want == "" {
				require.NoError(t, err)
				assert.Equal(t, image, got)
				return
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			assert.Nil(t, got)
			if c.name != "empty" {
				assert.True(t, errors.Is(err, errs.ErrNotSupported))
			}
		})
	}
}
