package runtime

import (
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
