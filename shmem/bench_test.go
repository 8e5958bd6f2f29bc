package shmem_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/shmem"
)

// Single-PE costs of the host API over the shm transport (to self): the
// argument checks, the runtime lookup and the memory operation.
// Run: go test -run '^$' -bench . ./shmem/

func BenchmarkPut8Quiet(b *testing.B) {
	start(b)
	a := alloc[uint64](b, 1)
	src := []uint64{42}
	b.ReportAllocs()
	for b.Loop() {
		if err := shmem.Put(a, 0, src, 0); err != nil {
			b.Fatal(err)
		}
		if err := shmem.Quiet(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkP(b *testing.B) {
	start(b)
	a := alloc[uint64](b, 1)
	b.ReportAllocs()
	for b.Loop() {
		if err := shmem.P(a, 0, 7, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkG(b *testing.B) {
	start(b)
	a := alloc[uint64](b, 1)
	b.ReportAllocs()
	var sum uint64
	for b.Loop() {
		v, err := shmem.G(a, 0, 0)
		if err != nil {
			b.Fatal(err)
		}
		sum += v
	}
	_ = sum
}

func BenchmarkAtomicFetchAdd(b *testing.B) {
	start(b)
	a := alloc[uint64](b, 1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := shmem.AtomicFetchAdd(a, 0, 1, 0); err != nil {
			b.Fatal(err)
		}
	}
	v, err := shmem.AtomicFetch(a, 0, 0)
	require.NoError(b, err)
	require.Positive(b, v)
}
