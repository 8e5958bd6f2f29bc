package cuda

import (
	"encoding/binary"
	"math"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Args packs kernel parameters for Function.Launch in the kernel ABI's
// layout: parameters in declaration order, each at the next offset aligned
// to its own alignment (its natural size for scalars and pointers; the
// given alignment for a by-value struct), as the PTX .param space lays them
// out. The bytes are Go memory holding no Go pointers; Launch copies them to
// the C stack and builds the void** kernelParams array there, so C never
// sees a Go pointer to a Go pointer and keeps nothing.
//
// An Args is reusable: Reset keeps the buffers, so a launch loop that
// rebuilds its arguments allocates nothing once the buffers have grown.
// Methods chain: a.Reset().Ptr(buf).I32(n).F32(alpha). A packing mistake
// (too many parameters, a bad alignment) is remembered and returned by Err
// and by Launch. The zero value is an empty argument list. Not safe for
// concurrent use.
//
//	var a cuda.Args
//	a.Ptr(dst).U64(n).F32(1.5)
//	err := fn.Launch(grid, block, 0, stream, &a)
type Args struct {
	buf  []byte
	offs []uint32
	err  error
}

// Reset empties the list, keeping its buffers, and returns a.
func (a *Args) Reset() *Args {
	a.buf = a.buf[:0]
	a.offs = a.offs[:0]
	a.err = nil
	return a
}

// Len returns the number of parameters.
func (a *Args) Len() int { return len(a.offs) }

// Size returns the packed size in bytes (the end of the last parameter).
func (a *Args) Size() int { return len(a.buf) }

// Offset returns the byte offset of parameter i.
func (a *Args) Offset(i int) int { return int(a.offs[i]) }

// Bytes returns the packed parameter bytes (little-endian, as the GPU reads
// them). The slice aliases a's buffer until the next change.
func (a *Args) Bytes() []byte { return a.buf }

// Err returns the first packing error, or nil.
func (a *Args) Err() error { return a.err }

// slot appends size bytes at the next offset aligned to align and returns
// them, or nil (after recording the error) when the list is full.
func (a *Args) slot(size, align int) []byte {
	if a.err != nil {
		return nil
	}
	off := (len(a.buf) + align - 1) &^ (align - 1)
	switch {
	case len(a.offs) >= MaxParams:
		a.err = errors.Wrapf(errs.ErrInvalidArgument, "cuda: Args: more than %d kernel parameters", MaxParams)
		return nil
	case off+size > MaxParamBytes:
		a.err = errors.WithHint(errors.Wrapf(errs.ErrInvalidArgument,
			"cuda: Args: parameter %d ends at byte %d, over the %d-byte kernel parameter limit",
			len(a.offs), off+size, MaxParamBytes),
			"pass large data through device memory and a pointer parameter")
		return nil
	}
	a.offs = append(a.offs, uint32(off))
	// Zeroed padding and slot; the compiler turns append(s, make(...)...)
	// into an in-place extension, so this allocates only when growing.
	a.buf = append(a.buf, make([]byte, off+size-len(a.buf))...)
	return a.buf[off : off+size]
}

// U8 appends an unsigned char / uint8_t parameter.
func (a *Args) U8(v uint8) *Args {
	if b := a.slot(1, 1); b != nil {
		b[0] = v
	}
	return a
}

// I8 appends a signed char / int8_t parameter.
func (a *Args) I8(v int8) *Args { return a.U8(uint8(v)) }

// U16 appends an unsigned short / uint16_t parameter.
func (a *Args) U16(v uint16) *Args {
	if b := a.slot(2, 2); b != nil {
		binary.LittleEndian.PutUint16(b, v)
	}
	return a
}

// I16 appends a short / int16_t parameter.
func (a *Args) I16(v int16) *Args { return a.U16(uint16(v)) }

// U32 appends an unsigned int / uint32_t parameter.
func (a *Args) U32(v uint32) *Args {
	if b := a.slot(4, 4); b != nil {
		binary.LittleEndian.PutUint32(b, v)
	}
	return a
}

// I32 appends an int / int32_t parameter.
func (a *Args) I32(v int32) *Args { return a.U32(uint32(v)) }

// U64 appends an unsigned long long / uint64_t / size_t parameter.
func (a *Args) U64(v uint64) *Args {
	if b := a.slot(8, 8); b != nil {
		binary.LittleEndian.PutUint64(b, v)
	}
	return a
}

// I64 appends a long long / int64_t parameter.
func (a *Args) I64(v int64) *Args { return a.U64(uint64(v)) }

// F32 appends a float parameter.
func (a *Args) F32(v float32) *Args { return a.U32(math.Float32bits(v)) }

// F64 appends a double parameter.
func (a *Args) F64(v float64) *Args { return a.U64(math.Float64bits(v)) }

// Ptr appends a pointer parameter (T* in the kernel) holding a device
// address (64-bit on every platform goshmem supports).
func (a *Args) Ptr(p DevicePtr) *Args { return a.U64(uint64(p)) }

// Struct appends a by-value struct parameter: its bytes exactly as the
// device lays the struct out (little-endian, padding included) and its
// alignment (1, 2, 4, 8 or 16: the largest member alignment, or the
// __align__ value).
func (a *Args) Struct(b []byte, align int) *Args {
	if a.err != nil {
		return a
	}
	if align <= 0 || align > 16 || align&(align-1) != 0 {
		a.err = errors.Wrapf(errs.ErrInvalidArgument, "cuda: Args.Struct: parameter %d: align=%d, want 1, 2, 4, 8 or 16", len(a.offs), align)
		return a
	}
	if len(b) == 0 || len(b)%align != 0 {
		a.err = errors.Wrapf(errs.ErrInvalidArgument, "cuda: Args.Struct: parameter %d: %d bytes is not a positive multiple of align=%d (a C struct's size is)", len(a.offs), len(b), align)
		return a
	}
	if s := a.slot(len(b), align); s != nil {
		copy(s, b)
	}
	return a
}
