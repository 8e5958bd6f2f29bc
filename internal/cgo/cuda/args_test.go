package cuda

import (
	"encoding/binary"
	"math"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

func TestArgsLayout(t *testing.T) {
	tests := []struct {
		name  string
		build func(a *Args)
		offs  []int
		bytes []byte
	}{
		{"empty", func(a *Args) {}, []int{}, []byte{}},
		{"u8 then u64 pads to 8", func(a *Args) { a.U8(0xab).U64(0x0102030405060708) },
			[]int{0, 8}, []byte{0xab, 0, 0, 0, 0, 0, 0, 0, 8, 7, 6, 5, 4, 3, 2, 1}},
		{"u8 u16 u32: 0 2 4", func(a *Args) { a.U8(1).U16(0x0302).U32(0x07060504) },
			[]int{0, 2, 4}, []byte{1, 0, 2, 3, 4, 5, 6, 7}},
		{"i32 f32 ptr", func(a *Args) { a.I32(-2).F32(1.5).Ptr(0xdeadbeef00) },
			[]int{0, 4, 8}, []byte{0xfe, 0xff, 0xff, 0xff, 0x00, 0x00, 0xc0, 0x3f,
				0x00, 0xef, 0xbe, 0xad, 0xde, 0, 0, 0}},
		{"i8 i16 packs at 0 2", func(a *Args) { a.I8(-1).I16(-2) }, []int{0, 2}, []byte{0xff, 0, 0xfe, 0xff}},
		{"u32 then f64 pads to 8", func(a *Args) { a.U32(9).F64(-2.25) },
			[]int{0, 8}, append([]byte{9, 0, 0, 0, 0, 0, 0, 0}, le64(math.Float64bits(-2.25))...)},
		{"i64 then u8 then struct align 4", func(a *Args) {
			a.I64(-1).U8(5).Struct([]byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}, 4)
		}, []int{0, 8, 12}, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 5, 0, 0, 0,
			1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}},
		{"struct align 16 after u8", func(a *Args) { a.U8(7).Struct(make([]byte, 16), 16) },
			[]int{0, 16}, append([]byte{7}, make([]byte, 31)...)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var a Args
			tt.build(&a)
			require.NoError(t, a.Err())
			require.Equal(t, len(tt.offs), a.Len())
			for i, o := range tt.offs {
				assert.Equal(t, o, a.Offset(i), "offset of parameter %d", i)
			}
			if len(tt.bytes) == 0 {
				assert.Empty(t, a.Bytes())
			} else {
				assert.Equal(t, tt.bytes, a.Bytes())
			}
			assert.Equal(t, len(tt.bytes), a.Size())
		})
	}
}

func le64(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }

func TestArgsErrors(t *testing.T) {
	var a Args
	a.Struct([]byte{1, 2, 3}, 3)
	require.Error(t, a.Err())
	assert.True(t, errors.Is(a.Err(), errs.ErrInvalidArgument))
	assert.Contains(t, a.Err().Error(), "align=3")
	a.U32(1) // ignored after an error
	assert.Equal(t, 0, a.Len())
	a.Reset()
	require.NoError(t, a.Err())

	a.Struct([]byte{1, 2, 3, 4, 5, 6}, 4)
	assert.ErrorContains(t, a.Err(), "not a positive multiple of align=4")

	a.Reset()
	a.Struct(make([]byte, 32752), 16).U64(1)
	require.NoError(t, a.Err())
	assert.Equal(t, 32760, a.Size())
	a.U32(1) // 32760+4 = 32764 still fits
	require.NoError(t, a.Err())
	a.U8(1)
	require.Error(t, a.Err())
	assert.ErrorContains(t, a.Err(), "over the 32764-byte kernel parameter limit")

	a.Reset()
	for i := 0; i < MaxParams; i++ {
		a.U8(1)
	}
	require.NoError(t, a.Err())
	a.U8(1)
	assert.ErrorContains(t, a.Err(), "more than 1024 kernel parameters")
}

func TestArgsReuseAllocatesNothing(t *testing.T) {
	var a Args
	build := func() {
		a.Reset().Ptr(0x1000).U8(1).U16(2).I32(3).U64(4).F32(5).F64(6).I64(-7)
	}
	build() // grow once
	allocs := testing.AllocsPerRun(1000, build)
	assert.Zero(t, allocs)
}
