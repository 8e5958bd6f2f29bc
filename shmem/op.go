package shmem

import "github.com/goshmem/goshmem/collectives"

// Op is a reduction operator for Reduce.
type Op = collectives.Op

// The reduction operators. And, Or and Xor are for integer types only.
const (
	OpSum  = collectives.OpSum
	OpProd = collectives.OpProd
	OpMin  = collectives.OpMin
	OpMax  = collectives.OpMax
	OpAnd  = collectives.OpAnd
	OpOr   = collectives.OpOr
	OpXor  = collectives.OpXor
)
