package collectives

// Op is a reduction operator.
type Op int

// The reduction operators (Ref: OpenSHMEM 1.6 §9.9.11). And, Or and Xor
// are for integer types only.
const (
	OpSum Op = iota
	OpProd
	OpMin
	OpMax
	OpAnd
	OpOr
	OpXor
)

var opNames = [...]string{"sum", "prod", "min", "max", "and", "or", "xor"}

// String is the operator's lower-case name ("sum").
func (o Op) String() string {
	if o < 0 || int(o) >= len(opNames) {
		return "op(?)"
	}
	return opNames[o]
}

// Bitwise reports whether o is and, or or xor (integers only).
func (o Op) Bitwise() bool { return o == OpAnd || o == OpOr || o == OpXor }
