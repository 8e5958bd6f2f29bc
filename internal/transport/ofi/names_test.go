package ofi

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/goshmem/goshmem/internal/transport"
)

func TestAtomicWhatNamesEveryAMO(t *testing.T) {
	for o := transport.AMOFetch; o <= transport.AMOXor; o++ {
		assert.Equal(t, "atomic "+o.String(), atomicWhat[o])
	}
}
