package runtime

import (
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport/proxy"
)

// The CUDA backend's throttle: auto drains only where another PE uses the
// same GPU; bad values name the PE, the setting and the valid range.
func TestCUDAOptions(t *testing.T) {
	o, err := cudaOptions(0, 0, "auto", "auto", false)
	require.NoError(t, err)
	assert.Equal(t, proxy.CUDAOptions{MaxInFlight: proxy.DefaultMaxInFlight}, o)
	o, err = cudaOptions(0, 0, "auto", "auto", true)
	require.NoError(t, err)
	assert.Equal(t, proxy.CUDAOptions{MaxInFlight: proxy.DefaultDrainInFlight, DrainAll: true}, o)
	o, err = cudaOptions(0, time.Second, "8", "auto", true)
	require.NoError(t, err)
	assert.Equal(t, proxy.CUDAOptions{Stall: time.Second, MaxInFlight: 8, DrainAll: true}, o)
	o, err = cudaOptions(0, 0, "32", "drain", false)
	require.NoError(t, err)
	assert.True(t, o.DrainAll)
	o, err = cudaOptions(0, 0, "auto", "keep", true)
	require.NoError(t, err)
	assert.False(t, o.DrainAll)

	_, err = cudaOptions(3, 0, "auto", "fast", false)
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrInvalidArgument), "%v", err)
	assert.Contains(t, err.Error(), `PE 3: Init: GOSHMEM_PROXY_THROTTLE="fast" is not a throttle (valid: auto, drain, keep)`)
	for _, bad := range []string{"0", "-1", "2097152", "many"} {
		_, err = cudaOptions(1, 0, bad, "auto", false)
		require.Error(t, err, bad)
		assert.Contains(t, err.Error(), `PE 1: Init: GOSHMEM_PROXY_INFLIGHT="`+bad+`"; must be auto or a number of chains in [1, 1048576]`)
	}
}

// The proxy's two diagnostics take one of two values; anything else names
// the PE, the setting and both values.
func TestTwoWaySettings(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want bool
		bad  bool
	}{{"high", false, false}, {"normal", true, false}, {"low", false, true}} {
		s, err := env.Read(func(k string) (string, bool) {
			if k == "GOSHMEM_PROXY_STREAM_PRIORITY" {
				return tc.val, true
			}
			return "", false
		})
		require.NoError(t, err)
		r := &Runtime{Me: 2, Settings: s}
		on, err := r.twoWay("GOSHMEM_PROXY_STREAM_PRIORITY", "high", "normal")
		if tc.bad {
			require.Error(t, err)
			assert.True(t, errors.Is(err, errs.ErrInvalidArgument))
			assert.Contains(t, err.Error(), `PE 2: Init: GOSHMEM_PROXY_STREAM_PRIORITY="low" (valid: high, normal)`)
			continue
		}
		require.NoError(t, err)
		assert.Equal(t, tc.want, on, tc.val)
	}
}
