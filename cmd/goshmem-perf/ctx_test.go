package main

import (
	"bytes"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// -ctx labels the rows goshmem/ctx unless -variant names the series.
func TestHostCtxFlag(t *testing.T) {
	o, err := parseHostFlags([]string{"-ctx"}, io.Discard)
	require.NoError(t, err)
	assert.True(t, o.ctx)
	assert.Equal(t, "ctx", o.variant)
	o, err = parseHostFlags([]string{"-ctx", "-variant", "ctx-tuned"}, io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "ctx-tuned", o.variant)
	o, err = parseHostFlags(nil, io.Discard)
	require.NoError(t, err)
	assert.False(t, o.ctx)
	assert.Empty(t, o.variant)
}

// A 1-PE run of the barrier and lock rows with -ctx: the Context forms
// work, and the rows carry the variant.
func TestHostCtxRows(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := runHost([]string{"-ctx", "-json", "-only", "^(barrier|lock)$", "-iters", "200", "-warmup", "10"}, &stdout, &stderr)
	require.Equal(t, 0, code, "stderr:\n%s", stderr.String())
	rows, err := ParseRows(&stdout, "stdout")
	require.NoError(t, err)
	var names []string
	for _, r := range rows {
		names = append(names, r.Name)
		assert.Equal(t, "ctx", r.Variant, r.Name)
	}
	assert.ElementsMatch(t, []string{"barrier", "lock"}, names)
}
