package symmetric

import (
	stderrors "errors"
	"math"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

func TestCheckFree(t *testing.T) {
	tests := []struct {
		name  string
		sizes []uint64
		free  uint64
		want  []string // nil: fits
	}{
		{"no PEs", nil, 0, nil},
		{"exact fit", []uint64{gib, gib, gib, gib}, 4 * gib, nil},
		{"room to spare", []uint64{gib, gib}, 64 * gib, nil},
		{"unlimited tmpfs", []uint64{math.MaxUint64, math.MaxUint64}, Unlimited, nil},
		{"one byte short", []uint64{gib, gib, gib, gib}, 4*gib - 1, []string{
			"the 4 PEs of the node need 4294967296 bytes (4 GiB) of symmetric heap in /dev/shm",
			"(GOSHMEM_SYMMETRIC_SIZE=1073741824 each)",
			"/dev/shm has 4294967295 bytes (4 GiB) free",
		}},
		{"docker default shm", []uint64{gib}, 64 * mib, []string{
			"the 1 PE of the node needs 1073741824 bytes (1 GiB)",
			"/dev/shm has 67108864 bytes (64 MiB) free",
		}},
		{"sizes differ", []uint64{mib, 2 * mib}, mib, []string{
			"3145728 bytes (3 MiB)", "heaps of [1048576 2097152] bytes",
		}},
		{"sum overflows", []uint64{math.MaxUint64, 1}, math.MaxUint64 - 1, []string{"more than 2^64 bytes"}},
		{"nothing free", []uint64{4096}, 0, []string{"has 0 bytes (0 bytes) free"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckFree("/dev/shm", tc.sizes, tc.free)
			if tc.want == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			assert.True(t, stderrors.Is(err, errs.ErrHeapExhausted), "standard errors.Is: ErrHeapExhausted")
			assert.True(t, stderrors.Is(err, ErrShmCapacity), "standard errors.Is: ErrShmCapacity")
			assert.True(t, errors.Is(err, errs.ErrHeapExhausted), "errors package Is: ErrHeapExhausted")
			for _, w := range tc.want {
				assert.Contains(t, err.Error(), w)
			}
			hints := errors.FlattenHints(err)
			assert.Contains(t, hints, "lower GOSHMEM_SYMMETRIC_SIZE")
			assert.Contains(t, hints, "--shm-size")
			assert.Contains(t, errors.FlattenDetails(err), "SIGBUS")
		})
	}
}

func TestFmtBytes(t *testing.T) {
	tests := []struct {
		n    uint64
		want string
	}{
		{0, "0 bytes"}, {1023, "1023 bytes"}, {1024, "1 KiB"}, {1536, "1.5 KiB"},
		{64 * mib, "64 MiB"}, {gib, "1 GiB"}, {4*gib - 1, "4 GiB"}, {24 * gib, "24 GiB"},
		{math.MaxUint64, "16 EiB"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, fmtBytes(tc.n), "%d", tc.n)
	}
}
