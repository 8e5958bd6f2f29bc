package runtime

import (
	"encoding/binary"
	stderrors "errors"
	"fmt"
	"testing"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

// The GPU heap that grows (CUDA VMM) on the fake driver, PEs as goroutines
// of one process (fakeCases: vmm-*). The fake's chunks are memfds, so a
// peer's chunk mapped from its descriptor is the owner's memory.

// bootExchange is Grow's exchange over the bootstrap.
func bootExchange(r *Runtime) func([]byte) ([][]byte, error) {
	return func(rec []byte) ([][]byte, error) {
		all, err := r.Boot.Allgather(rec)
		if err != nil {
			return nil, err
		}
		out := make([][]byte, r.NPEs)
		for pe := range out {
			out[pe] = all[pe*len(rec) : (pe+1)*len(rec)]
		}
		return out, nil
	}
}

// stateHeapSize reads heap_size from this PE's device state.
func stateHeapSize(r *Runtime) (uint64, error) {
	var b [8]byte
	err := r.GPU.Ctx.MemcpyDtoH(unsafe.Pointer(&b[0]), r.GPU.StatePtr()+16, 8)
	return binary.LittleEndian.Uint64(b[:]), err
}

// Growth on n PEs (4M mapped, 64M reserved): the allocator spans the
// reservation; a block past the mapped size grows every PE's heap to the
// same size (chunks of the fake's 2 MiB granularity), the device state's
// heap size follows, a put into the next PE's new chunk reaches it, a
// second growth extends it again, and a need past the limit is
// ErrHeapExhausted naming GOSHMEM_DEVICE_HEAP_MAX. Close leaves nothing
// (TestGPUFakeCase checks the fake's live objects).
func gpuVMMGrow(t *testing.T, n int) {
	got := fakeJob(t, n, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "64M", "GOSHMEM_DEVICE_HEAP_CHUNK": "2M"}, nil, func(r *Runtime) error {
		g := r.GPU
		if !g.VMM() || g.Size() != fakeMapped(4<<20) || g.Limit() != fakeMapped(64<<20) || r.GAlloc.Total() != fakeMapped(64<<20)-fakeControl {
			return fmt.Errorf("PE %d: VMM %v, size %d, limit %d, allocator %d", r.Me, g.VMM(), g.Size(), g.Limit(), r.GAlloc.Total())
		}
		base := g.Base()
		for _, block := range []uint64{5 << 20, 12<<20 + 8} {
			off, err := r.GAlloc.Alloc(block, GPUAlign)
			if err != nil {
				return err
			}
			end := r.GPUControlBytes() + off + block
			if err := g.Grow(end, bootExchange(r)); err != nil {
				return fmt.Errorf("PE %d: Grow(%d): %w", r.Me, end, err)
			}
			want := (end + 2<<20 - 1) &^ (2<<20 - 1)
			if g.Size() != want || g.Base() != base {
				return fmt.Errorf("PE %d: after Grow(%d): size %d (want %d), base %#x (was %#x)", r.Me, end, g.Size(), want, g.Base(), base)
			}
			if hs, err := stateHeapSize(r); err != nil || hs != want {
				return fmt.Errorf("PE %d: device state heap_size %d (%v), want %d", r.Me, hs, err, want)
			}
			// the last word of the new chunk, on the next PE
			next, prev := (r.Me+1)%r.NPEs, (r.Me+r.NPEs-1)%r.NPEs
			if err := g.Put(nil, next, end-8, binary.LittleEndian.AppendUint64(nil, uint64(7000+r.Me))); err != nil {
				return err
			}
			if err := r.Boot.Barrier(); err != nil {
				return err
			}
			b := make([]byte, 8)
			if err := g.Get(nil, b, r.Me, end-8); err != nil {
				return err
			}
			if v := binary.LittleEndian.Uint64(b); v != uint64(7000+prev) {
				return fmt.Errorf("PE %d: word at %d of the new chunk is %d, want %d (PE %d's put)", r.Me, end-8, v, 7000+prev, prev)
			}
			if err := r.Boot.Barrier(); err != nil {
				return err
			}
			if _, err := r.GAlloc.Free(off); err != nil {
				return err
			}
		}
		// A need the allocator never asks for (past the limit): refused on
		// every PE, the size unchanged.
		size := g.Size()
		err := g.Grow(g.Limit()+1, bootExchange(r))
		if !stderrors.Is(err, errs.ErrHeapExhausted) || !assert.ObjectsAreEqual([]string{"raise GOSHMEM_DEVICE_HEAP_MAX"}, errors.GetAllHints(err)) || g.Size() != size {
			return fmt.Errorf("PE %d: Grow past the limit: %v (hints %q), size %d (was %d)", r.Me, err, errors.GetAllHints(err), g.Size(), size)
		}
		return nil
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
		assert.Contains(t, p.info, fmt.Sprintf("goshmem: info: PE %d: GPU heap: CUDA VMM, growing from %d bytes mapped up to %d reserved, at least %d bytes at a time", i,
			fakeMapped(4<<20), fakeMapped(64<<20), fakeGran))
		assert.Contains(t, p.info, fmt.Sprintf("the first %d bytes hold %d team slots", fakeControl, fakeTeams))
	}
}

// gpuVMMGrowStep: GOSHMEM_DEVICE_HEAP_CHUNK (chunk; "" for the default)
// is the least a growth maps, so a growth to need from mapped maps
// want(mapped, need), at most the limit. The needs: just past the mapped
// size, the same again (fits: no growth), 9 MiB past it, the limit.
func gpuVMMGrowStep(t *testing.T, chunk string, want func(mapped, need uint64) uint64) {
	env := map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "64M"}
	if chunk != "" {
		env["GOSHMEM_DEVICE_HEAP_CHUNK"] = chunk
	}
	got := fakeJob(t, 2, env, nil, func(r *Runtime) error {
		g := r.GPU
		for _, need := range []uint64{g.Size() + 8, g.Size() + 8, g.Size() + 9<<20, g.Limit()} {
			if need <= g.Size() {
				continue // already mapped: Grow is a no-op
			}
			w := min(want(g.Size(), need), g.Limit())
			if err := g.Grow(need, bootExchange(r)); err != nil {
				return fmt.Errorf("PE %d: Grow(%d): %w", r.Me, need, err)
			}
			if g.Size() != w {
				return fmt.Errorf("PE %d: after Grow(%d): size %d, want %d", r.Me, need, g.Size(), w)
			}
			if hs, err := stateHeapSize(r); err != nil || hs != w {
				return fmt.Errorf("PE %d: device state heap_size %d (%v), want %d", r.Me, hs, err, w)
			}
		}
		if g.Size() != g.Limit() {
			return fmt.Errorf("PE %d: size %d after growing to the limit %d", r.Me, g.Size(), g.Limit())
		}
		return nil
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// fakeRoundUp rounds n up to the fake driver's granularity.
func fakeRoundUp(n uint64) uint64 { return (n + fakeGran - 1) &^ (fakeGran - 1) }

// A device without VMM (FAKECUDA_VMM=0): the legacy heap, fixed at
// GOSHMEM_DEVICE_HEAP_SIZE, which GOSHMEM_INFO says.
func gpuVMMOff(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		g := r.GPU
		if g.VMM() || g.Limit() != g.Size() || g.LimitSetting() != "GOSHMEM_DEVICE_HEAP_SIZE" {
			return fmt.Errorf("PE %d: VMM %v, size %d, limit %d, %s", r.Me, g.VMM(), g.Size(), g.Limit(), g.LimitSetting())
		}
		return heapTraffic(r)
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
		assert.Contains(t, p.info, fmt.Sprintf("goshmem: info: PE %d: GPU heap: cuMemAlloc of %d bytes shared by legacy CUDA IPC", i, fakeControl+4<<20))
	}
}

// An initial size past the maximum (the fake GPU's memory by default)
// fails Init on every PE, saying to lower the one or raise the other.
func gpuVMMHeapRefused(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_SIZE": "2T"}, nil, nil)
	for i, p := range got {
		require.Error(t, p.err, "PE %d", i)
		assert.True(t, stderrors.Is(p.err, errs.ErrNotSupported), "PE %d: %v", i, p.err)
		assert.Contains(t, p.err.Error(), fmt.Sprintf("GOSHMEM_DEVICE_HEAP_SIZE=2199023255552 bytes and the %d-byte control area (%d in 2097152-byte chunks) exceed the 150753771520-byte reservation (GOSHMEM_DEVICE_HEAP_MAX=150754820096 bytes)",
			fakeControl, fakeMapped(2<<40)))
		assert.Contains(t, errors.FlattenHints(p.err), "lower GOSHMEM_DEVICE_HEAP_SIZE or raise GOSHMEM_DEVICE_HEAP_MAX")
	}
	bad := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "lots"}, nil, nil)
	for i, p := range bad {
		require.Error(t, p.err, "PE %d", i)
		assert.True(t, stderrors.Is(p.err, errs.ErrInvalidArgument), "PE %d: %v", i, p.err)
		assert.Contains(t, p.err.Error(), `GOSHMEM_DEVICE_HEAP_MAX="lots"; must be auto or a size in bytes`)
	}
}
