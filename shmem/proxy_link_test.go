package shmem

import (
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
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
