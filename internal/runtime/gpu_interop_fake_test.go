package runtime

import (
	"bytes"
	"encoding/binary"
	stderrors "errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/gpulib"
	"github.com/goshmem/goshmem/internal/ibgda"
)

// Registered buffers and the growing heap with the remote GPU transports
// (the GPU proxy, IBGDA's soft NIC) on the fake driver, 2 PEs as
// goroutines (fakeCases: register-*, vmm-*-grow). The library kernels run
// on the host (lib.cu's host build): the device paths are the real ones.

// remoteEnv is the settings of each remote GPU transport under test.
var remoteEnv = map[string]map[string]string{
	"proxy": {"GOSHMEM_GPU": "on", "GOSHMEM_GPU_TRANSPORT": "proxy", "GOSHMEM_PROXY_WORKERS": "2"},
	"ibgda": {"GOSHMEM_GPU": "on", "GOSHMEM_GPU_TRANSPORT": "ibgda", "GOSHMEM_IBGDA_NIC": "soft"},
}

// pattern is byte i of PE pe's data tagged salt.
func pattern(pe, salt, i int) byte { return byte(pe*37 + salt*11 + i*7 + i>>8) }

func patterned(pe, salt, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = pattern(pe, salt, i)
	}
	return b
}

// devWrite and devRead copy host bytes to and from device memory of r's
// context (not through the heap's transport: any device address).
func devWrite(r *Runtime, addr uint64, b []byte) error {
	return r.GPU.Ctx.MemcpyHtoD(cuda.DevicePtr(addr), unsafe.Pointer(&b[0]), len(b))
}

func devRead(r *Runtime, addr uint64, n int) ([]byte, error) {
	b := make([]byte, n)
	return b, r.GPU.Ctx.MemcpyDtoH(unsafe.Pointer(&b[0]), cuda.DevicePtr(addr), n)
}

// paths is what the remote transport counted: the proxy's requests by
// kind, or the soft NIC's inline writes and the uses of its bounce-slot
// key and of the key of registered-buffer slot 0.
type paths struct {
	put, putReg, inline, get, getReg, reply uint64 // proxy
	nicInline, slotKey, regKey              uint64 // soft NIC
}

func countPaths(r *Runtime) paths {
	if r.proxy != nil {
		o := r.proxy.Ops()
		return paths{put: o.Put, putReg: o.PutReg, inline: o.PutInline, get: o.Get, getReg: o.GetReg, reply: o.GetReply}
	}
	n := r.softNIC.nic
	return paths{nicInline: n.Stats().InlineWrites.Load(), slotKey: n.KeyUses(softIBGDASlotK), regKey: n.KeyUses(softIBGDARegK)}
}

// registerRemote: a buffer this PE's context allocated (not goshmem's) is
// registered, then the source of a put and of a put with signal to the
// next PE and the destination of a get from it, through the library's
// kernels (what PutOnStream, PutSignalOnStream and GetOnStream launch).
// The values arrive, and the transport used the buffer in place: the
// proxy served PUT/GET requests naming it (no 8-byte inline chunks, no
// reply slots), the soft NIC read and wrote it under its key (no inline
// writes of the data, no bounce slot). Unregistered (nothing in flight),
// the buffer is no longer found (a put from it goes inline), and its
// memory is its owner's: the values stay, and the owner frees it.
func registerRemote(t *testing.T, transport string) {
	const size, putN, getN, sigN = 64 << 10, 40000, 30000, 20000
	got := fakeJob(t, 2, remoteEnv[transport], nil, func(r *Runtime) error {
		g := r.GPU
		next, prev := (r.Me+1)%r.NPEs, (r.Me+r.NPEs-1)%r.NPEs
		fp, err := g.Ctx.MemAlloc(size) // the other library's buffer
		if err != nil {
			return err
		}
		foreign := uint64(fp)
		if err := devWrite(r, foreign, patterned(r.Me, 1, size)); err != nil {
			return err
		}
		if transport == "ibgda" {
			// a ConnectX's registration (mlx5 without the device here):
			// refused, naming the NIC, and nothing is left registered
			m := r.ibgdaMem()
			soft := m.nic
			m.nic = &mlx5IBGDA{gctx: g.Ctx, gpu: g, me: r.Me}
			err := r.RegisterDevice(foreign, 4096, "RegisterDevice")
			m.nic = soft
			if !stderrors.Is(err, errs.ErrNotSupported) || !strings.Contains(fmt.Sprint(err), "GOSHMEM_IBGDA_NIC=mlx5: no open mlx5 device to register the registered GPU buffer") {
				return fmt.Errorf("PE %d: RegisterDevice with a ConnectX that cannot register: %v", r.Me, err)
			}
			if _, ok := r.RegisteredDevice(foreign); ok || m.slots[0] != nil {
				return fmt.Errorf("PE %d: a refused registration left the buffer registered", r.Me)
			}
		}
		if err := r.RegisterDevice(foreign, 48<<10, "RegisterDevice"); err != nil {
			return err
		}
		doff := g.Size() - 128<<10 // the heap's last 128 KiB: the runtime allocated nothing there
		heap := uint64(g.Base()) + doff
		if err := g.ZeroBlock(doff, 128<<10); err != nil {
			return err
		}
		if err := g.Put(nil, r.Me, doff+64<<10, patterned(r.Me, 2, getN)); err != nil {
			return err
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}
		before := countPaths(r)
		// put: the registered buffer from byte 8 into the next PE's block
		if err := r.LibLaunch(nil, gpulib.Put, &[gpulib.NArgs]uint64{heap, foreign + 8, putN, uint64(next)}, "PutOnStream"); err != nil {
			return err
		}
		// get: the next PE's second half into the registered buffer at 16
		if err := r.LibLaunch(nil, gpulib.Get, &[gpulib.NArgs]uint64{foreign + 16, heap + 64<<10, getN, uint64(next)}, "GetOnStream"); err != nil {
			return err
		}
		if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
			return err
		}
		mid := countPaths(r)
		// put with signal: the registered buffer's bytes [0, sigN) to the
		// next PE's block at 40960, then its signal word at 120 KiB
		sig := heap + 120<<10
		if err := r.LibLaunch(nil, gpulib.PutSignal, &[gpulib.NArgs]uint64{heap + 40960, foreign, sigN, sig, 9, gpulib.SignalSet,
			uint64(next)}, "PutSignalOnStream"); err != nil {
			return err
		}
		if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
			return err
		}
		after := countPaths(r)
		if err := r.Boot.Barrier(); err != nil {
			return err
		}

		var bad []string
		check := func(what string, got, want []byte) {
			if !bytes.Equal(got, want) {
				i := 0
				for i < len(got) && got[i] == want[i] {
					i++
				}
				bad = append(bad, fmt.Sprintf("%s: byte %d of %d differs", what, i, len(want)))
			}
		}
		mine := make([]byte, 128<<10)
		if err := g.Get(nil, mine, r.Me, doff); err != nil {
			return err
		}
		fromPrev := patterned(prev, 1, size)
		check("the put from PE "+fmt.Sprint(prev)+"'s registered buffer", mine[:putN], fromPrev[8:8+putN])
		// prev's registered buffer, after its get, held this PE's second half at 16..
		prevReg := append(append([]byte(nil), fromPrev[:16]...), patterned(r.Me, 2, getN)...)
		check("the put with signal from PE "+fmt.Sprint(prev)+"'s registered buffer", mine[40960:40960+sigN], prevReg[:sigN])
		if v := binary.LittleEndian.Uint64(mine[120<<10:]); v != 9 {
			bad = append(bad, fmt.Sprintf("signal word %d, want 9", v))
		}
		reg, err := devRead(r, foreign, size)
		if err != nil {
			return err
		}
		check("the get into the registered buffer", reg[16:16+getN], patterned(next, 2, getN))

		switch transport {
		case "proxy":
			if d := mid.putReg - before.putReg; d != 1 {
				bad = append(bad, fmt.Sprintf("proxy: %d PUTs from the registered buffer for a put of %d bytes, want 1", d, putN))
			}
			if d := mid.getReg - before.getReg; d != 1 {
				bad = append(bad, fmt.Sprintf("proxy: %d GETs into the registered buffer for a get of %d bytes, want 1", d, getN))
			}
			if d := after.putReg - mid.putReg; d != 1 {
				bad = append(bad, fmt.Sprintf("proxy: %d PUTs from the registered buffer for the put with signal, want 1", d))
			}
			if after.inline != before.inline || after.reply != before.reply || after.put != before.put || after.get != before.get {
				bad = append(bad, fmt.Sprintf("proxy: inline puts %d -> %d, reply gets %d -> %d, heap puts %d -> %d, heap gets %d -> %d: "+
					"the registered buffer was not used in place", before.inline, after.inline, before.reply, after.reply,
					before.put, after.put, before.get, after.get))
			}
		case "ibgda":
			if mid.nicInline != before.nicInline || mid.slotKey != before.slotKey {
				bad = append(bad, fmt.Sprintf("soft NIC: inline writes %d -> %d, bounce-slot key uses %d -> %d for a put and a get: "+
					"the registered buffer was not used in place", before.nicInline, mid.nicInline, before.slotKey, mid.slotKey))
			}
			if d := mid.regKey - before.regKey; d < 2 {
				bad = append(bad, fmt.Sprintf("soft NIC: the registered buffer's key named by %d WQEs for a put and a get", d))
			}
			if after.regKey == mid.regKey || after.nicInline-mid.nicInline != 1 {
				bad = append(bad, fmt.Sprintf("soft NIC: put with signal: key uses %d -> %d, inline writes %d -> %d (want the payload "+
					"by key, the signal word alone inline)", mid.regKey, after.regKey, mid.nicInline, after.nicInline))
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("PE %d: %v", r.Me, bad)
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}

		// unregistered with nothing in flight: the table no longer has it
		if err := r.UnregisterDevice(foreign, "Free"); err != nil {
			return err
		}
		if m := r.ibgdaMem(); m != nil && m.slots[0] != nil {
			return fmt.Errorf("PE %d: IBGDA slot 0 still in use after Free", r.Me)
		}
		if r.proxy != nil && r.proxy.Registered() != 0 {
			return fmt.Errorf("PE %d: the proxy holds %d registered buffers after Free", r.Me, r.proxy.Registered())
		}
		before = countPaths(r)
		if err := r.LibLaunch(nil, gpulib.Put, &[gpulib.NArgs]uint64{heap, foreign, 4096, uint64(next)}, "PutOnStream"); err != nil {
			return err
		}
		if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
			return err
		}
		after = countPaths(r)
		if after.inline == before.inline && after.nicInline == before.nicInline {
			return fmt.Errorf("PE %d: a put from the unregistered buffer did not go inline (%+v -> %+v)", r.Me, before, after)
		}
		now, err := devRead(r, foreign, size)
		if err != nil {
			return err
		}
		if !bytes.Equal(now, reg) {
			return fmt.Errorf("PE %d: the owner's memory changed when it was unregistered", r.Me)
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}
		return g.Ctx.MemFree(fp) // the owner frees it
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// stateWord reads n (4 or 8) bytes of the IBGDA device state at off.
func stateWord(r *Runtime, off uint64, n int) (uint64, error) {
	b, err := devRead(r, r.ibgdaMem().state+off, n)
	if err != nil {
		return 0, err
	}
	if n == 4 {
		return uint64(binary.LittleEndian.Uint32(b)), nil
	}
	return binary.LittleEndian.Uint64(b), nil
}

// vmmRemoteGrow: with every peer reached through the remote transport,
// the heap grows (Grow, 64M reserved) twice, by 3 MiB and then 5 MiB, and
// each time the transport covers the new chunk before the device may
// address it: the proxy accepts its offsets, the soft NIC has new keys
// over the grown heaps in the device state (lkey, rkeys, size). Then, in
// the last 64 KiB of the need (the new chunk): a put of 4 KiB from this
// PE's new chunk into the next PE's (a data pointer under the heap's key
// on the NIC), a get back from it, and an fcollect of every PE's block,
// through the library's kernels; values checked. Close leaves no driver
// object (TestGPUFakeCase).
func vmmRemoteGrow(t *testing.T, transport string) {
	env := map[string]string{"GOSHMEM_DEVICE_HEAP_MAX": "64M", "GOSHMEM_DEVICE_HEAP_CHUNK": "2M"}
	for k, v := range remoteEnv[transport] {
		env[k] = v
	}
	got := fakeJob(t, 2, env, nil, func(r *Runtime) error {
		g := r.GPU
		if !g.VMM() {
			return fmt.Errorf("PE %d: no VMM heap", r.Me)
		}
		next, prev := (r.Me+1)%r.NPEs, (r.Me+r.NPEs-1)%r.NPEs
		var lkey0 uint64
		if transport == "ibgda" {
			var err error
			if lkey0, err = stateWord(r, ibgda.StateOffLKey, 4); err != nil {
				return err
			}
		}
		for round, more := range []uint64{3 << 20, 5 << 20} {
			end := g.Size() + more
			if err := g.Grow(end, 0, bootExchange(r)); err != nil {
				return fmt.Errorf("PE %d: Grow(%d): %w", r.Me, end, err)
			}
			size := g.Size()
			if size < end {
				return fmt.Errorf("PE %d: heap of %d bytes after Grow(%d)", r.Me, size, end)
			}
			switch transport {
			case "proxy":
				if r.proxy.HeapSize() != size {
					return fmt.Errorf("PE %d: the proxy accepts %d bytes, the heap has %d", r.Me, r.proxy.HeapSize(), size)
				}
			case "ibgda":
				hs, err := stateWord(r, ibgda.StateOffHeapSize, 8)
				if err != nil {
					return err
				}
				lk, err := stateWord(r, ibgda.StateOffLKey, 4)
				if err != nil {
					return err
				}
				if hs != size || uint32(lk) != softIBGDAHeapKey(round+1, r.Me) || lk == lkey0 {
					return fmt.Errorf("PE %d: IBGDA state after growth %d: heap_size %d (heap %d), heap_lkey %#x (want %#x)",
						r.Me, round+1, hs, size, lk, softIBGDAHeapKey(round+1, r.Me))
				}
			}
			// the block's last 64 KiB lie in the new chunk
			at := end - 64<<10
			base := uint64(g.Base())
			if err := g.ZeroBlock(at, 64<<10); err != nil {
				return err
			}
			if err := g.Put(nil, r.Me, at, patterned(r.Me, 3+round, 8192)); err != nil {
				return err
			}
			if err := r.Boot.Barrier(); err != nil {
				return err
			}
			// put: my [0, 4K) -> next's [16K, 20K); get: next's [4K, 8K) -> my [24K, 28K)
			if err := r.LibLaunch(nil, gpulib.Put, &[gpulib.NArgs]uint64{base + at + 16<<10, base + at, 4096, uint64(next)}, "PutOnStream"); err != nil {
				return err
			}
			if err := r.LibLaunch(nil, gpulib.Get, &[gpulib.NArgs]uint64{base + at + 24<<10, base + at + 4096, 4096, uint64(next)}, "GetOnStream"); err != nil {
				return err
			}
			if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
				return err
			}
			if err := r.Boot.Barrier(); err != nil {
				return err
			}
			// fcollect: every PE's [0, 2K) -> everyone's [32K, 32K + 2K*n)
			if err := r.LibLaunchColl(nil, gpulib.FCollect, &[gpulib.NArgs]uint64{0, base + at + 32<<10, base + at, 2048},
				2048*r.NPEs, "FCollectOnStream"); err != nil {
				return err
			}
			if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
				return err
			}
			if err := r.Boot.Barrier(); err != nil {
				return err
			}
			mine := make([]byte, 64<<10)
			if err := g.Get(nil, mine, r.Me, at); err != nil {
				return err
			}
			if !bytes.Equal(mine[16<<10:20<<10], patterned(prev, 3+round, 4096)) {
				return fmt.Errorf("PE %d, growth %d: the put from PE %d into the new chunk did not arrive", r.Me, round+1, prev)
			}
			if !bytes.Equal(mine[24<<10:28<<10], patterned(next, 3+round, 8192)[4096:]) {
				return fmt.Errorf("PE %d, growth %d: the get from PE %d's new chunk did not arrive", r.Me, round+1, next)
			}
			for pe := 0; pe < r.NPEs; pe++ {
				if o := 32<<10 + 2048*pe; !bytes.Equal(mine[o:o+2048], patterned(pe, 3+round, 2048)) {
					return fmt.Errorf("PE %d, growth %d: fcollect block of PE %d on the new chunk differs", r.Me, round+1, pe)
				}
			}
			if err := r.Boot.Barrier(); err != nil {
				return err
			}
		}
		return nil
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// registerPeerHeap: two PEs on one GPU (one context) with the fixed heap
// (legacy CUDA IPC): a peer's heap is mapped here, device memory of this
// PE's context as the driver sees it, but symmetric memory: RegisterDevice
// refuses a range in it, as in this PE's own heap, with
// ErrInvalidArgument naming the PE whose heap it overlaps, and nothing is
// left registered.
func registerPeerHeap(t *testing.T) {
	env := map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE": "0", "GOSHMEM_DEVICE_HEAP_MAX": "fixed"}
	got := fakeJob(t, 2, env, nil, func(r *Runtime) error {
		g := r.GPU
		other := 1 - r.Me
		var bad []string
		for _, tc := range []struct {
			name string
			pe   int
		}{{"own heap", r.Me}, {"peer's heap", other}} {
			base := uint64(g.PeerAddr(tc.pe))
			if base == 0 {
				return fmt.Errorf("PE %d: PE %d's heap is not mapped here", r.Me, tc.pe)
			}
			addr := base + g.Size() - 8192
			err := r.RegisterDevice(addr, 4096, "RegisterDevice")
			if !stderrors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(fmt.Sprint(err), "heap") {
				bad = append(bad, fmt.Sprintf("%s: RegisterDevice(%#x, 4096) = %v, want ErrInvalidArgument naming the heap", tc.name, addr, err))
			}
			if _, ok := r.RegisteredDevice(addr); ok {
				bad = append(bad, fmt.Sprintf("%s: %#x left registered", tc.name, addr))
				_ = r.UnregisterDevice(addr, "Free")
			}
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}
		if len(bad) > 0 {
			return fmt.Errorf("PE %d: %v", r.Me, bad)
		}
		return nil
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// registerHeapAhead: with CUDA VMM, a growth prepared ahead of need maps
// a chunk behind the usable heap (g.Size()), device memory of this PE's
// device as the driver sees it, that the next growth adopts into the
// symmetric heap. RegisterDevice refuses a range in it, as in the usable
// heap: registered, it would alias the blocks AllocDevice places there.
func registerHeapAhead(t *testing.T) {
	env := map[string]string{"GOSHMEM_GPU": "on", "GOSHMEM_DEVICE_HEAP_MAX": "64M", "GOSHMEM_DEVICE_HEAP_CHUNK": "4M"}
	got := fakeJob(t, 1, env, nil, func(r *Runtime) error {
		g := r.GPU
		if !g.VMM() {
			return fmt.Errorf("PE %d: no VMM heap", r.Me)
		}
		g.SetBurst(false)
		mapped := g.Size()
		// a need near the end of the heap starts the preparation
		if err := g.Grow(mapped-1, 0, bootExchange(r)); err != nil || g.Size() != mapped {
			return fmt.Errorf("PE %d: Grow(%d) within the heap: %v, size %d (was %d)", r.Me, mapped-1, err, g.Size(), mapped)
		}
		ahead := uint64(g.Base()) + mapped + 4096
		deadline := time.Now().Add(20 * time.Second)
		for {
			if _, err := g.Ctx.AllocationOf(cuda.DevicePtr(ahead)); err == nil {
				break
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("PE %d: no chunk prepared behind the heap at %#x", r.Me, ahead)
			}
			time.Sleep(time.Millisecond)
		}
		var bad []string
		for _, tc := range []struct {
			name string
			addr uint64
		}{{"usable heap", uint64(g.Base()) + mapped - 8192}, {"chunk prepared ahead", ahead}} {
			err := r.RegisterDevice(tc.addr, 4096, "RegisterDevice")
			if !stderrors.Is(err, errs.ErrInvalidArgument) || !strings.Contains(fmt.Sprint(err), "heap") {
				bad = append(bad, fmt.Sprintf("%s: RegisterDevice(%#x, 4096) = %v, want ErrInvalidArgument naming the heap", tc.name, tc.addr, err))
			}
			if _, ok := r.RegisteredDevice(tc.addr); ok {
				bad = append(bad, fmt.Sprintf("%s: %#x left registered", tc.name, tc.addr))
				_ = r.UnregisterDevice(tc.addr, "Free")
			}
		}
		if len(bad) > 0 {
			return fmt.Errorf("PE %d: %v", r.Me, bad)
		}
		return nil
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}

// vmmIBGDAGrowOnePEFails: IBGDA's growth hook fails on PE 1 only, after
// the keys were exchanged (its device state cannot be read or written: a
// released context). The GrowHook contract: every PE fails the
// growth and keeps its heap size; once PE 1 is well again, the same growth
// succeeds on every PE, with keys that cover the new chunk (a put into it
// arrives).
func vmmIBGDAGrowOnePEFails(t *testing.T) {
	env := map[string]string{"GOSHMEM_DEVICE_HEAP_MAX": "64M", "GOSHMEM_DEVICE_HEAP_CHUNK": "2M"}
	for k, v := range remoteEnv["ibgda"] {
		env[k] = v
	}
	got := fakeJob(t, 2, env, nil, func(r *Runtime) error {
		g, m := r.GPU, r.ibgdaMem()
		next, prev := (r.Me+1)%r.NPEs, (r.Me+r.NPEs-1)%r.NPEs
		size0 := g.Size()
		end := size0 + 3<<20
		ctx := m.ctx
		if r.Me == 1 {
			// a released context: the hook's copies fail with ErrReleased
			dead, err := g.Dev.RetainPrimary()
			if err != nil {
				return err
			}
			if err := dead.Release(); err != nil {
				return err
			}
			m.ctx = dead
		}
		gerr := g.Grow(end, 0, bootExchange(r))
		m.ctx = ctx
		var bad []string
		if gerr == nil {
			bad = append(bad, fmt.Sprintf("PE %d: Grow(%d) succeeded while PE 1's IBGDA hook failed", r.Me, end))
		}
		if g.Size() != size0 {
			bad = append(bad, fmt.Sprintf("PE %d: heap of %d bytes after a failed growth, was %d", r.Me, g.Size(), size0))
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}
		if len(bad) > 0 {
			return stderrors.New(strings.Join(bad, "; "))
		}
		if err := g.Grow(end, 0, bootExchange(r)); err != nil {
			return fmt.Errorf("PE %d: Grow(%d) once every PE is well: %w", r.Me, end, err)
		}
		if hs, err := stateWord(r, ibgda.StateOffHeapSize, 8); err != nil || hs != g.Size() {
			return fmt.Errorf("PE %d: IBGDA heap_size %d (%v), heap %d", r.Me, hs, err, g.Size())
		}
		at := end - 64<<10 // in the new chunk
		base := uint64(g.Base())
		if err := g.ZeroBlock(at, 64<<10); err != nil {
			return err
		}
		if err := g.Put(nil, r.Me, at, patterned(r.Me, 7, 4096)); err != nil {
			return err
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}
		if err := r.LibLaunch(nil, gpulib.Put, &[gpulib.NArgs]uint64{base + at + 16<<10, base + at, 4096, uint64(next)}, "PutOnStream"); err != nil {
			return err
		}
		if err := r.SyncStream(nil, "Stream.Synchronize"); err != nil {
			return err
		}
		if err := r.Boot.Barrier(); err != nil {
			return err
		}
		mine := make([]byte, 4096)
		if err := g.Get(nil, mine, r.Me, at+16<<10); err != nil {
			return err
		}
		if !bytes.Equal(mine, patterned(prev, 7, 4096)) {
			return fmt.Errorf("PE %d: the put from PE %d into the new chunk did not arrive", r.Me, prev)
		}
		return r.Boot.Barrier()
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		require.NoError(t, p.work, "PE %d", i)
	}
}
