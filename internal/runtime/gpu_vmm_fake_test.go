package runtime

import (
	"bytes"
	"encoding/binary"
	stderrors "errors"
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/testutil"
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
		g.SetBurst(false) // the sizes checked below must not depend on the preparation's pace
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
			if err := g.Grow(end, 0, bootExchange(r)); err != nil {
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
		err := g.Grow(g.Limit()+1, 0, bootExchange(r))
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
		g.SetBurst(false) // the sizes checked below must not depend on the preparation's pace
		for _, need := range []uint64{g.Size() + 8, g.Size() + 8, g.Size() + 9<<20, g.Limit()} {
			if need <= g.Size() {
				continue // already mapped: Grow is a no-op
			}
			w := min(want(g.Size(), need), g.Limit())
			if err := g.Grow(need, 0, bootExchange(r)); err != nil {
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
		assert.Contains(t, p.err.Error(), `GOSHMEM_DEVICE_HEAP_MAX="lots"; must be auto, fixed or a size in bytes`)
	}
}

// The next growth prepared ahead (CHUNK 4M, 4M mapped, 64M reserved): a
// block that leaves less than a step starts the preparation without
// growing; the growth that follows adopts the prepared chunk (zeroed on
// every PE, the fake's junk at its ends gone; a put into the next PE's
// adopted chunk arrives); a need past the prepared chunk adopts it and
// maps the rest by need; blocks in fresh memory skip clearing but come out
// zero, and a block in a chunk mapped by need is cleared of the fake's
// junk. Close drops what is prepared and not adopted (the case's leak check).
func gpuVMMAhead(t *testing.T, n int) {
	got := fakeJob(t, n, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "64M", "GOSHMEM_DEVICE_HEAP_CHUNK": "4M"}, nil, func(r *Runtime) error {
		g := r.GPU
		g.SetBurst(false) // the sizes checked below must not depend on the preparation's pace
		ex := bootExchange(r)
		next := (r.Me + 1) % r.NPEs
		zeroAt := func(pe int, off uint64, what string) error {
			b := make([]byte, 64)
			if err := g.Get(nil, b, pe, off); err != nil {
				return err
			}
			if !bytes.Equal(b, make([]byte, 64)) {
				return fmt.Errorf("PE %d: %s: PE %d's bytes [%d, %d) are %x, want zero", r.Me, what, pe, off, off+64, b)
			}
			return nil
		}
		mapped := g.Size()
		if err := g.Grow(mapped-1, 0, ex); err != nil || g.Size() != mapped {
			return fmt.Errorf("PE %d: Grow(%d) within the heap: %v, size %d (was %d)", r.Me, mapped-1, err, g.Size(), mapped)
		}
		if gr, ad := g.Growths(); gr != 0 || ad != 0 {
			return fmt.Errorf("PE %d: %d growths, %d adopted before any need past the heap", r.Me, gr, ad)
		}
		// adopt: exactly the prepared step
		if err := g.Grow(mapped+8, 0, ex); err != nil {
			return fmt.Errorf("PE %d: Grow(%d): %w", r.Me, mapped+8, err)
		}
		if gr, ad := g.Growths(); gr != 1 || ad != 1 || g.Size() != mapped+4<<20 {
			return fmt.Errorf("PE %d: after Grow(%d): %d growths, %d adopted, size %d (want 1, 1, %d)", r.Me, mapped+8, gr, ad, g.Size(), mapped+4<<20)
		}
		if hs, err := stateHeapSize(r); err != nil || hs != g.Size() {
			return fmt.Errorf("PE %d: device state heap_size %d (%v), want %d", r.Me, hs, err, g.Size())
		}
		for _, pe := range []int{r.Me, next} {
			if err := zeroAt(pe, mapped, "start of the adopted chunk"); err != nil {
				return err
			}
			if err := zeroAt(pe, g.Size()-64, "end of the adopted chunk"); err != nil {
				return err
			}
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}
		// a fresh block: not cleared (the chunk was), zero all the same
		if err := g.ZeroBlock(mapped, 1<<20); err != nil {
			return err
		}
		if err := zeroAt(r.Me, mapped+1<<20-64, "fresh block"); err != nil {
			return err
		}
		if err := g.Put(nil, next, g.Size()-8, binary.LittleEndian.AppendUint64(nil, uint64(9000+r.Me))); err != nil {
			return err
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}
		b := make([]byte, 8)
		if err := g.Get(nil, b, r.Me, g.Size()-8); err != nil {
			return err
		}
		prev := (r.Me + r.NPEs - 1) % r.NPEs
		if v := binary.LittleEndian.Uint64(b); v != uint64(9000+prev) {
			return fmt.Errorf("PE %d: last word of the adopted chunk is %d, want %d (PE %d's put)", r.Me, v, 9000+prev, prev)
		}
		// past the prepared chunk: adopt it, map the rest by need
		size := g.Size()
		need := size + 4<<20 + 3<<20
		if err := g.Grow(need, 0, ex); err != nil {
			return fmt.Errorf("PE %d: Grow(%d): %w", r.Me, need, err)
		}
		if gr, ad := g.Growths(); gr != 2 || ad != 2 || g.Size() != fakeRoundUp(need) {
			return fmt.Errorf("PE %d: after Grow(%d): %d growths, %d adopted, size %d (want 2, 2, %d)", r.Me, need, gr, ad, g.Size(), fakeRoundUp(need))
		}
		// the chunk mapped by need holds the fake's junk at its end until a
		// block there is cleared
		end := g.Size()
		if err := g.ZeroBlock(end-(1<<20), 1<<20); err != nil {
			return err
		}
		if err := zeroAt(r.Me, end-64, "block in a chunk mapped by need"); err != nil {
			return err
		}
		// leaves a prepared chunk for Close
		if err := g.Grow(end-1, 0, ex); err != nil {
			return err
		}
		return r.Boot.Barrier()
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
		assert.Contains(t, p.info, "prepared in the background once the heap has less than that left (or less than the largest block so far, doubled while allocations outrun it, up to 4 times as much)", "PE %d", i)
	}
}

// The preparation is sized by the largest block (CHUNK 4M, 3 PEs): an
// 8 MiB block past the heap grows by need, and the growth for the next
// 8 MiB block adopts an 8 MiB prepared chunk, zeroed on every PE; after a
// 40 MiB block the preparation is 4 steps (16 MiB), not 40.
func gpuVMMAheadBlock(t *testing.T) {
	got := fakeJob(t, 3, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "128M", "GOSHMEM_DEVICE_HEAP_CHUNK": "4M"}, nil, func(r *Runtime) error {
		g := r.GPU
		g.SetBurst(false) // the sizes checked below must not depend on the preparation's pace
		ex := bootExchange(r)
		grow := func(block uint64, wantGrown, wantAdopted uint64, wantSize uint64) error {
			need := g.Size() + block
			if err := g.Grow(need, block, ex); err != nil {
				return fmt.Errorf("PE %d: Grow(%d, %d): %w", r.Me, need, block, err)
			}
			if gr, ad := g.Growths(); gr != wantGrown || ad != wantAdopted || g.Size() != wantSize {
				return fmt.Errorf("PE %d: after Grow(%d, %d): %d growths, %d adopted, size %d (want %d, %d, %d)",
					r.Me, need, block, gr, ad, g.Size(), wantGrown, wantAdopted, wantSize)
			}
			return nil
		}
		// a prepared chunk is zeroed; one mapped by need holds the fake's
		// junk at its end
		endZero := func() error {
			for pe := range r.NPEs {
				b := make([]byte, 64)
				if err := g.Get(nil, b, pe, g.Size()-64); err != nil {
					return err
				}
				if !bytes.Equal(b, make([]byte, 64)) {
					return fmt.Errorf("PE %d: the heap's last bytes on PE %d are %x, want zero (a prepared chunk)", r.Me, pe, b)
				}
			}
			return nil
		}
		mapped := g.Size()
		if err := grow(8<<20, 1, 0, fakeRoundUp(mapped+8<<20)); err != nil {
			return err
		}
		size := g.Size()
		if err := grow(8<<20, 2, 1, size+8<<20); err != nil {
			return err
		}
		if err := endZero(); err != nil {
			return err
		}
		// 40 MiB: adopts the 8 MiB prepared, maps the rest by need; the
		// next preparation is 16 MiB (a 16 MiB block adopts it exactly)
		size = g.Size()
		if err := grow(40<<20, 3, 2, size+40<<20); err != nil {
			return err
		}
		size = g.Size()
		if err := grow(16<<20, 4, 3, size+16<<20); err != nil {
			return err
		}
		if err := endZero(); err != nil {
			return err
		}
		return r.Boot.Barrier()
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// Allocations that outrun the preparation double it (CHUNK 4M, 2 PEs, a
// driver whose cuMemCreate takes FAKECUDA_VMM_DELAY_MS=200): growths
// back to back each wait for their preparation, which doubles from 4 to
// 8 to 16 MiB and stays at 4 steps; a growth whose preparation had
// finished long before (slack at least its time) adopts it and halves
// the next one, and the next growth back to back, which waits for that
// 8 MiB, doubles it back.
func gpuVMMAheadBurst(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "128M", "GOSHMEM_DEVICE_HEAP_CHUNK": "4M"}, nil, func(r *Runtime) error {
		g := r.GPU
		ex := bootExchange(r)
		for i, step := range []uint64{4 << 20, 8 << 20, 16 << 20, 16 << 20, 16 << 20, 8 << 20, 16 << 20} {
			if i == 4 {
				// the 16 MiB preparation finishes during the pause
				if err := r.Boot.Barrier(); err != nil {
					return err
				}
				time.Sleep(time.Second)
			}
			size := g.Size()
			// a block that ends near the end of the heap starts the
			// preparation if none is in flight
			if err := g.Grow(size-1, 8, ex); err != nil {
				return err
			}
			if err := g.Grow(size+8, 8, ex); err != nil {
				return fmt.Errorf("PE %d: growth %d: %w", r.Me, i+1, err)
			}
			if gr, ad := g.Growths(); gr != uint64(i+1) || ad != uint64(i+1) || g.Size() != size+step {
				return fmt.Errorf("PE %d: growth %d: %d growths, %d adopted, %d bytes more (want %d, %d, %d)",
					r.Me, i+1, gr, ad, g.Size()-size, i+1, i+1, step)
			}
		}
		return r.Boot.Barrier()
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// The descriptor table is grown at Init for the chunks the heap can grow
// by (MAX 2G, CHUNK 2M: 1020 chunks, plus 64), so that no growth waits
// for the kernel to grow it (an RCU grace period in a multi-threaded
// process): /proc/self/status's FDSize holds that many more than are
// open, within RLIMIT_NOFILE.
func gpuVMMDescriptorTable(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "2G", "GOSHMEM_DEVICE_HEAP_CHUNK": "2M"}, nil, func(r *Runtime) error {
		v, err := testutil.SelfStatus("FDSize")
		if err != nil {
			return err
		}
		size, err := strconv.Atoi(v)
		if err != nil {
			return err
		}
		fds, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			return err
		}
		var lim unix.Rlimit
		if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
			return err
		}
		if want := min(uint64(len(fds))+1020, lim.Cur); uint64(size) < want {
			return fmt.Errorf("PE %d: descriptor table of %d with %d open, want at least %d", r.Me, size, len(fds), want)
		}
		return r.Boot.Barrier()
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// A GPU too full for every PE's prepared chunk (FAKECUDA_VMM_MEM: the
// two heaps, one 4 MiB chunk and 2 MiB more): one PE's preparation fails,
// so the growth drops the other's and maps only the need (2 MiB on each
// PE); the next growth finds the GPU full and fails on every PE, the size
// unchanged; nothing leaks.
func gpuVMMAheadTight(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "64M", "GOSHMEM_DEVICE_HEAP_CHUNK": "4M"}, nil, func(r *Runtime) error {
		g := r.GPU
		g.SetBurst(false) // the sizes checked below must not depend on the preparation's pace
		ex := bootExchange(r)
		mapped := g.Size()
		for _, need := range []uint64{mapped - 1, mapped + 8} {
			if err := g.Grow(need, 0, ex); err != nil {
				return fmt.Errorf("PE %d: Grow(%d): %w", r.Me, need, err)
			}
		}
		if gr, ad := g.Growths(); gr != 1 || ad != 0 || g.Size() != mapped+2<<20 {
			return fmt.Errorf("PE %d: %d growths, %d adopted, size %d; want 1, 0, %d", r.Me, gr, ad, g.Size(), mapped+2<<20)
		}
		size := g.Size()
		if err := g.Grow(size+8, 0, ex); !stderrors.Is(err, errs.ErrHeapExhausted) || g.Size() != size {
			return fmt.Errorf("PE %d: Grow(%d) on a full GPU: %v, size %d (was %d)", r.Me, size+8, err, g.Size(), size)
		}
		return r.Boot.Barrier()
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// GOSHMEM_DEVICE_HEAP_MAX=fixed: the legacy heap where VMM is supported,
// which GOSHMEM_INFO says.
func gpuVMMFixed(t *testing.T) {
	got := fakeJob(t, 2, map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "fixed"}, nil, func(r *Runtime) error {
		g := r.GPU
		if g.VMM() || g.Limit() != g.Size() {
			return fmt.Errorf("PE %d: VMM %v, size %d, limit %d", r.Me, g.VMM(), g.Size(), g.Limit())
		}
		return heapTraffic(r)
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
		assert.Contains(t, p.info, "shared by legacy CUDA IPC (GOSHMEM_DEVICE_HEAP_MAX=fixed), fixed", "PE %d", i)
	}
}
