// Package elem is the element-type set of symmetric arrays and the few
// facts about those types that the runtime needs (size, float or integer).
package elem

import "unsafe"

// Elem is every type a symmetric array may hold. Float16 and BFloat16
// (half.go) are in it through ~uint16; HalfKind tells them apart.
type Elem interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64 | ~float32 | ~float64
}

// Integer is the subset that atomics and bitwise reductions accept.
type Integer interface {
	~int8 | ~int16 | ~int32 | ~int64 | ~uint8 | ~uint16 | ~uint32 | ~uint64
}

// Size is unsafe.Sizeof(T).
func Size[T Elem]() int {
	var z T
	return int(unsafe.Sizeof(z))
}

// IsFloat reports whether T is float32 or float64 (or a type defined on
// one), Float16 or BFloat16.
func IsFloat[T Elem]() bool {
	if HalfKind[T]() != NotHalf {
		return true
	}
	var one T = 1
	half := one / 2 // 0 for integers, 0.5 for floats
	return half != 0
}

// Name is a short type description for error messages ("int64", "float32").
func Name[T Elem]() string {
	var z T
	switch any(z).(type) {
	case int8:
		return "int8"
	case int16:
		return "int16"
	case int32:
		return "int32"
	case int64:
		return "int64"
	case uint8:
		return "uint8"
	case uint16:
		return "uint16"
	case uint32:
		return "uint32"
	case uint64:
		return "uint64"
	case float32:
		return "float32"
	case float64:
		return "float64"
	case Float16:
		return "Float16"
	case BFloat16:
		return "BFloat16"
	}
	kind := "int"
	if IsFloat[T]() {
		kind = "float"
	}
	return kind + string(rune('0'+8*Size[T]()/10)) + string(rune('0'+8*Size[T]()%10))
}

// Bytes views s as its bytes (no copy).
func Bytes[T Elem](s []T) []byte {
	if len(s) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&s[0])), len(s)*Size[T]())
}
