package shmem_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// TestUniqueIDOnePE: a 1-PE job through the unique-ID API, the ID carried
// through its text form, in this process (which also serves it).
func TestUniqueIDOnePE(t *testing.T) {
	id, err := shmem.NewUniqueID(shmem.WithListenAddr("127.0.0.1:0"))
	require.NoError(t, err)
	text, err := id.MarshalText()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(text), "goshmem-uid-v1:"), "%s", text)
	assert.Contains(t, id.String(), "127.0.0.1:")
	assert.NotContains(t, id.String(), string(text), "String keeps the secret out")

	var got shmem.UniqueID
	require.NoError(t, got.UnmarshalText(text))
	require.NoError(t, shmem.Init(shmem.WithUniqueID(got, 0, 1), shmem.WithSymmetricSize(8<<20)))
	assert.Equal(t, 0, shmem.MyPE())
	assert.Equal(t, 1, shmem.NPEs())
	require.NoError(t, shmem.BarrierAll())
	require.NoError(t, shmem.Finalize())
}

func TestUniqueIDBad(t *testing.T) {
	err := shmem.Init(shmem.WithUniqueID(shmem.UniqueID{}, 0, 1))
	require.Error(t, err)
	assert.ErrorIs(t, err, shmem.ErrInvalidArgument)
	assert.Equal(t, -1, shmem.MyPE(), "a failed Init leaves goshmem uninitialized")

	var id shmem.UniqueID
	for _, bad := range []string{"", "not an id", "goshmem-uid-v1:%%%"} {
		assert.ErrorIs(t, id.UnmarshalText([]byte(bad)), shmem.ErrInvalidArgument, "%q", bad)
	}
	_, err = shmem.NewUniqueID(shmem.WithListenAddr("0.0.0.0:0"))
	assert.ErrorIs(t, err, shmem.ErrInvalidArgument, "a wildcard cannot be carried in an ID")
	_, err = shmem.NewUniqueID(shmem.WithListenAddr("no-port"))
	assert.ErrorIs(t, err, shmem.ErrInvalidArgument)
}
