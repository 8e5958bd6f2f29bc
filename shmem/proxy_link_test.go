package shmem

import (
	"testing"
	"time"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/transport/proxy"
)

// Every PE uses the GPU proxy's ofi link or none does; a PE whose settings
// failed fails the others, naming it (no PE may go on to the link's
// allgather or heap area alone).
func TestAgreeProxyLink(t *testing.T) {
	require.NoError(t, agreeProxyLink(0, []byte{proxyLinkNone, proxyLinkNone, proxyLinkNone}))
	require.NoError(t, agreeProxyLink(2, []byte{proxyLinkWanted, proxyLinkWanted, proxyLinkWanted}))

	err := agreeProxyLink(1, []byte{proxyLinkWanted, proxyLinkWanted, proxyLinkNone})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrNotSymmetric), "%v", err)
	assert.Contains(t, err.Error(), "PE 0 reaches GPU heaps through the proxy's ofi backend and PE 2 does not")

	err = agreeProxyLink(2, []byte{proxyLinkNone, proxyLinkWanted, proxyLinkNone})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "PE 1 reaches GPU heaps through the proxy's ofi backend and PE 0 does not")

	err = agreeProxyLink(0, []byte{proxyLinkWanted, proxyLinkErr, proxyLinkWanted})
	require.Error(t, err)
	assert.True(t, errors.Is(err, errs.ErrInvalidArgument), "%v", err)
	assert.Contains(t, err.Error(), "PE 1 could not set up the GPU proxy's ofi backend")
}

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
