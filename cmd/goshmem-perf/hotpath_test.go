package main

// Hot-path microbenchmarks on a 1-PE job (the target is this PE's own heap,
// reached through the shm transport exactly as a node peer's would be), and
// the primitives they are made of, so a slow call can be broken down:
//
//	go test ./cmd/goshmem-perf -run '^$' -bench . -benchtime 2000000x
//
// They run only with -bench; the unit tests never call shmem.Init.

import (
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"unsafe"

	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/spin"
	"github.com/goshmem/goshmem/internal/transport"
	"github.com/goshmem/goshmem/internal/transport/shm"
	"github.com/goshmem/goshmem/shmem"
)

var (
	benchOnce sync.Once
	benchErr  error
	bArr      shmem.Array[byte]
	bI64      shmem.Array[int64]
	bSig      shmem.Array[uint64]
)

func benchInit(b *testing.B) {
	benchOnce.Do(func() {
		if benchErr = shmem.Init(shmem.WithSymmetricSize(64 << 20)); benchErr != nil {
			return
		}
		if bArr, benchErr = shmem.Alloc[byte](1 << 20); benchErr != nil {
			return
		}
		if bI64, benchErr = shmem.Alloc[int64](8); benchErr != nil {
			return
		}
		bSig, benchErr = shmem.Alloc[uint64](8)
	})
	if benchErr != nil {
		b.Fatal(benchErr)
	}
	b.ReportAllocs()
	b.ResetTimer()
}

func BenchmarkAPIPut8(b *testing.B) {
	benchInit(b)
	src := make([]byte, 8)
	for i := 0; i < b.N; i++ {
		if err := shmem.Put(bArr, 0, src, 0); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAPIQuiet(b *testing.B) {
	benchInit(b)
	for i := 0; i < b.N; i++ {
		if err := shmem.Quiet(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAPIPut8Quiet(b *testing.B) {
	benchInit(b)
	src := make([]byte, 8)
	for i := 0; i < b.N; i++ {
		_ = shmem.Put(bArr, 0, src, 0)
		if err := shmem.Quiet(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAPIPutNBI8(b *testing.B) {
	benchInit(b)
	src := make([]byte, 8)
	for i := 0; i < b.N; i++ {
		_ = shmem.PutNBI(bArr, 0, src, 0)
	}
}

func BenchmarkAPIGet8(b *testing.B) {
	benchInit(b)
	dst := make([]byte, 8)
	for i := 0; i < b.N; i++ {
		_ = shmem.Get(dst, bArr, 0, 0)
	}
}

func BenchmarkAPIP(b *testing.B) {
	benchInit(b)
	for i := 0; i < b.N; i++ {
		_ = shmem.P(bI64, 0, int64(i), 0)
	}
}

func BenchmarkAPIPQuiet(b *testing.B) {
	benchInit(b)
	for i := 0; i < b.N; i++ {
		_ = shmem.P(bI64, 0, int64(i), 0)
		_ = shmem.Quiet()
	}
}

func BenchmarkAPIG(b *testing.B) {
	benchInit(b)
	for i := 0; i < b.N; i++ {
		_, _ = shmem.G(bI64, 0, 0)
	}
}

func BenchmarkAPIAtomicFetchAdd(b *testing.B) {
	benchInit(b)
	for i := 0; i < b.N; i++ {
		_, _ = shmem.AtomicFetchAdd(bI64, 1, 1, 0)
	}
}

// WaitUntil whose condition already holds: the call's fixed cost.
func BenchmarkAPIWaitUntilReady(b *testing.B) {
	benchInit(b)
	bI64.Local()[2] = 1
	for i := 0; i < b.N; i++ {
		_ = shmem.WaitUntil(bI64, 2, shmem.CmpEQ, 1)
	}
}

func BenchmarkAPIPutSignal8(b *testing.B) {
	benchInit(b)
	src := make([]byte, 8)
	for i := 0; i < b.N; i++ {
		_ = shmem.PutSignal(bArr, 0, src, bSig, 0, uint64(i), shmem.SignalSet, 0)
	}
}

func BenchmarkAPISignalWaitUntilReady(b *testing.B) {
	benchInit(b)
	bSig.Local()[1] = 1
	for i := 0; i < b.N; i++ {
		_, _ = shmem.SignalWaitUntil(bSig, 1, shmem.CmpEQ, 1)
	}
}

// BarrierAll on 1 PE: Quiet plus the dissemination loop's setup (no rounds).
func BenchmarkAPIBarrierAll1PE(b *testing.B) {
	benchInit(b)
	for i := 0; i < b.N; i++ {
		_ = shmem.BarrierAll()
	}
}

func BenchmarkAPIAllocFree1MiB(b *testing.B) {
	benchInit(b)
	for i := 0; i < b.N; i++ {
		a, err := shmem.Alloc[byte](1 << 20)
		if err != nil {
			b.Fatal(err)
		}
		_ = a.Free()
	}
}

func BenchmarkAPIAllocFree64B(b *testing.B) {
	benchInit(b)
	for i := 0; i < b.N; i++ {
		a, err := shmem.Alloc[byte](64)
		if err != nil {
			b.Fatal(err)
		}
		_ = a.Free()
	}
}

// --- the primitives under them

var word [16]uint64

func BenchmarkPrimNanotime(b *testing.B) {
	var s int64
	for i := 0; i < b.N; i++ {
		s += nanotime()
	}
	runtime.KeepAlive(s)
}

func BenchmarkPrimCopy8(b *testing.B) {
	src := make([]byte, 8)
	dst := make([]byte, 64)
	for i := 0; i < b.N; i++ {
		copy(dst, src)
	}
}

func BenchmarkPrimLockedAdd(b *testing.B) { // shm.storeFence
	var w atomic.Uint64
	for i := 0; i < b.N; i++ {
		w.Add(1)
	}
}

func BenchmarkPrimAtomicStore(b *testing.B) { // XCHG on amd64
	for i := 0; i < b.N; i++ {
		atomic.StoreUint64(&word[0], uint64(i))
	}
}

func BenchmarkPrimMutex(b *testing.B) {
	var mu sync.Mutex
	for i := 0; i < b.N; i++ {
		mu.Lock()
		//lint:ignore SA2001 the benchmark measures an uncontended Lock/Unlock pair
		mu.Unlock()
	}
}

func BenchmarkPrimRWMutexRLock(b *testing.B) {
	var mu sync.RWMutex
	for i := 0; i < b.N; i++ {
		mu.RLock()
		//lint:ignore SA2001 the benchmark measures an uncontended RLock/RUnlock pair
		mu.RUnlock()
	}
}

func BenchmarkPrimScopeQuiet1Queue(b *testing.B) {
	s := quiet.NewScope("bench")
	s.Add(quiet.NewQueue("q", nil))
	p := spin.For(1, 2, 0)
	for i := 0; i < b.N; i++ {
		_ = s.Quiet(p, nil)
	}
}

func BenchmarkPrimShmPut8(b *testing.B) {
	buf := make([]byte, 4096)
	t := shm.New([]unsafe.Pointer{unsafe.Pointer(&buf[0])})
	q := quiet.NewQueue("q", nil)
	src := make([]byte, 8)
	for i := 0; i < b.N; i++ {
		_ = t.Put(q, 0, 64, src)
	}
}

func BenchmarkPrimShmPut8ViaInterface(b *testing.B) {
	buf := make([]byte, 4096)
	var t transport.Transport = shm.New([]unsafe.Pointer{unsafe.Pointer(&buf[0])})
	q := quiet.NewQueue("q", nil)
	src := make([]byte, 8)
	for i := 0; i < b.N; i++ {
		_ = t.Put(q, 0, 64, src)
	}
}

func BenchmarkPrimShmAtomicSet8(b *testing.B) {
	buf := make([]byte, 4096)
	var t transport.Transport = shm.New([]unsafe.Pointer{unsafe.Pointer(&buf[0])})
	q := quiet.NewQueue("q", nil)
	for i := 0; i < b.N; i++ {
		_, _ = t.Atomic(q, transport.AMOSet, 8, 0, 64, uint64(i), 0)
	}
}

func BenchmarkPrimShmQuiet(b *testing.B) {
	buf := make([]byte, 4096)
	t := shm.New([]unsafe.Pointer{unsafe.Pointer(&buf[0])})
	for i := 0; i < b.N; i++ {
		t.Quiet()
	}
}
