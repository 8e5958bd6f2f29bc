package fabric

import (
	"testing"

	"github.com/cockroachdb/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOpen(t *testing.T) {
	assert.Contains(t, Providers(), "tcp", "fi_getinfo offers tcp on every Linux host")
	e, err := Open("tcp;ofi_rxm")
	require.NoError(t, err, "libfabric with tcp;ofi_rxm is installed (libfabric1): it must open")
	defer e.Close()
	assert.Equal(t, "tcp;ofi_rxm", e.Attr.Provider)
	assert.True(t, e.Attr.Atomic, "ofi_rxm implements atomics")
	name, err := e.Name()
	require.NoError(t, err)
	assert.NotEmpty(t, name)
	assert.True(t, e.QueryAtomic(KindFetch, Uint64, OpSum))

	_, err = Open("bogus")
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoProvider))
	assert.Contains(t, errors.FlattenHints(err), "tcp")
}
