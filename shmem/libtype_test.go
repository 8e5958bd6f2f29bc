package shmem

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/goshmem/goshmem/internal/gpulib"
)

// The library kernels' element type of every Go element type: Float16 and
// BFloat16 (defined on uint16) must select the half kernels, not uint16's.
func TestLibType(t *testing.T) {
	type myFloat float32
	assert.Equal(t, gpulib.Float16, libType[Float16]())
	assert.Equal(t, gpulib.BFloat16, libType[BFloat16]())
	assert.Equal(t, gpulib.Type(5), libType[uint16]())
	assert.Equal(t, gpulib.Float32, libType[float32]())
	assert.Equal(t, gpulib.Float32, libType[myFloat]())
	assert.Equal(t, gpulib.Float64, libType[float64]())
	assert.Equal(t, gpulib.Type(3), libType[int64]())
	for _, k := range []gpulib.Type{gpulib.Float16, gpulib.BFloat16} {
		assert.Contains(t, []string{"half", "bfloat16"}, gpulib.Types[k])
	}
}
