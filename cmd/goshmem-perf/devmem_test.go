package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The alloc and register rows are opt-in (-mem or -only), with their
// sizes clamped to what the rows can run.
func TestDeviceMemFlags(t *testing.T) {
	o, err := parseDeviceFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.False(t, o.mem)
	assert.Equal(t, allocMinSize, o.allocMin)
	assert.Equal(t, 1<<30, o.allocMax)
	assert.Equal(t, 5, o.allocReps)
	assert.Equal(t, 8<<10, o.regMin)
	assert.Equal(t, 64<<20, o.regMax)
	o, err = parseDeviceFlags([]string{"-mem", "-alloc-maxsize", "1", "-alloc-reps", "0", "-reg-minsize", "4096", "-reg-maxsize", "1024"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.mem)
	assert.Equal(t, allocMinSize, o.allocMax, "at least the smallest alloc size")
	assert.Equal(t, 1, o.allocReps)
	assert.Equal(t, 4096, o.regMin)
	assert.Equal(t, 4096, o.regMax, "at least -reg-minsize")
	o, err = parseDeviceFlags([]string{"-alloc-minsize", "1024", "-alloc-maxsize", "1"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, allocMinSize, o.allocMin, "at least 2 MiB")
	o, err = parseDeviceFlags([]string{"-alloc-minsize", "134217728", "-alloc-maxsize", "1"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 134217728, o.allocMax, "at least -alloc-minsize")
}

// -h lists the new rows and flags.
func TestDeviceUsageListsMemRows(t *testing.T) {
	var b bytes.Buffer
	_, err := parseDeviceFlags([]string{"-h"}, &b)
	require.True(t, errors.Is(err, flag.ErrHelp), "%v", err)
	for _, s := range []string{"alloc_grow", "alloc_fit", "alloc_series", "cumemalloc", "stream_settled", "stream_in_prep", "put_on_stream_reg", "put_on_stream_heap", "memcpy_dtod", "memcpy_peer",
		"-mem", "-alloc-minsize", "-alloc-maxsize", "-alloc-reps", "-reg-minsize", "-reg-maxsize"} {
		assert.Contains(t, b.String(), s)
	}
	for _, n := range []string{"alloc_grow", "alloc_fit", "alloc_series", "cumemalloc", "stream_settled", "stream_in_prep", "put_on_stream_reg", "put_on_stream_heap", "memcpy_dtod", "memcpy_peer"} {
		assert.NotEmpty(t, descriptions[n], "description of %s", n)
	}
}

func TestAllocRepsFor(t *testing.T) {
	assert.Equal(t, 5, allocRepsFor(5, 2<<20))
	assert.Equal(t, 5, allocRepsFor(5, 64<<20))
	assert.Equal(t, 5, allocRepsFor(5, 128<<20))
	assert.Equal(t, 5, allocRepsFor(5, 1<<30))
	assert.Equal(t, 7, allocRepsFor(9, 1<<30)) // 8 growths: 8 GiB
	assert.Equal(t, 3, allocRepsFor(5, 2<<30))
	assert.Equal(t, 1, allocRepsFor(5, 4<<30))
	assert.Equal(t, 1, allocRepsFor(1, 1<<30))
	assert.Equal(t, 1, allocRepsFor(0, 2<<20))
}
