// Command cudacheck exercises goshmem's CUDA driver binding on a GPU
// machine: device query, memory round trips, an IPC handle, a PTX module, a
// kernel launch with arguments, and the launch overhead from Go.
//
//	go build -o /tmp/cudacheck ./internal/cgo/cuda/testdata/cudacheck
//	/tmp/cudacheck                       # built-in PTX (kernels fill, empty)
//	/tmp/cudacheck -ptx k.ptx -kernel fill -empty empty -device 1 -n 10000
//
// A -ptx module must hold the two kernels, extern "C":
//
//	__global__ void fill(unsigned *out, unsigned n, unsigned v) // out[i] = v + i
//	__global__ void empty(void)
//
// (-ptx takes any image cuModuleLoadData accepts: PTX, cubin or fatbin.)
// GOSHMEM_LIBCUDA overrides the driver library. Exit status 1 on any failure.
package main

import (
	"flag"
	"fmt"
	"os"
	"time"
	"unsafe"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/cgo/cuda"
)

// builtinPTX: the two kernels above, hand-written PTX that every driver
// since CUDA 11.0 JIT-compiles for its GPU.
// Ref: PTX ISA 7.0 (ld.param, mad.lo, setp, cvta.to.global, st.global).
const builtinPTX = `
.version 7.0
.target sm_52
.address_size 64

.visible .entry empty()
{
	ret;
}

.visible .entry fill(
	.param .u64 fill_param_0,
	.param .u32 fill_param_1,
	.param .u32 fill_param_2
)
{
	.reg .pred %p<2>;
	.reg .b32 %r<8>;
	.reg .b64 %rd<5>;

	ld.param.u64 %rd1, [fill_param_0];
	ld.param.u32 %r2, [fill_param_1];
	ld.param.u32 %r3, [fill_param_2];
	mov.u32 %r4, %ctaid.x;
	mov.u32 %r5, %ntid.x;
	mov.u32 %r6, %tid.x;
	mad.lo.s32 %r1, %r4, %r5, %r6;
	setp.ge.u32 %p1, %r1, %r2;
	@%p1 bra DONE;
	cvta.to.global.u64 %rd2, %rd1;
	mul.wide.u32 %rd3, %r1, 4;
	add.s64 %rd4, %rd2, %rd3;
	add.s32 %r7, %r3, %r1;
	st.global.u32 [%rd4], %r7;
DONE:
	ret;
}
`

func main() {
	ptx := flag.String("ptx", "", "module image to load (PTX, cubin or fatbin); default: built-in PTX")
	kernel := flag.String("kernel", "fill", "kernel fill(unsigned *out, unsigned n, unsigned v) to launch and check")
	emptyName := flag.String("empty", "empty", "empty kernel for the launch-overhead measurement")
	dev := flag.Int("device", 0, "device ordinal")
	n := flag.Int("n", 10000, "launches to time")
	flag.Parse()
	if err := run(*ptx, *kernel, *emptyName, cuda.Device(*dev), *n); err != nil {
		fmt.Fprintf(os.Stderr, "cudacheck: FAIL: %v\n", err)
		if h := errors.FlattenHints(err); h != "" {
			fmt.Fprintf(os.Stderr, "hint: %s\n", h)
		}
		os.Exit(1)
	}
	fmt.Println("cudacheck: PASS")
}

func run(ptxPath, kernel, emptyName string, dev cuda.Device, launches int) error {
	if err := cuda.Load(); err != nil {
		return err
	}
	ver, err := cuda.DriverVersion()
	if err != nil {
		return err
	}
	count, err := cuda.DeviceCount()
	if err != nil {
		return err
	}
	fmt.Printf("driver CUDA %d.%d, %d device(s)\n", ver/1000, ver%1000/10, count)
	for d := cuda.Device(0); int(d) < count; d++ {
		name, err := d.Name()
		if err != nil {
			return err
		}
		major, minor, err := d.ComputeCapability()
		if err != nil {
			return err
		}
		bus, err := d.PCIBusID()
		if err != nil {
			return err
		}
		mem, err := d.TotalMem()
		if err != nil {
			return err
		}
		sms, err := d.Attribute(cuda.AttrMultiprocessorCount)
		if err != nil {
			return err
		}
		peers := ""
		for o := cuda.Device(0); int(o) < count; o++ {
			if ok, err := d.CanAccessPeer(o); err != nil {
				return err
			} else if ok {
				peers += fmt.Sprintf(" %d", o)
			}
		}
		fmt.Printf("  device %d: %s, sm_%d%d, %d SMs, %.1f GiB, PCI %s, peers:%s\n",
			d, name, major, minor, sms, float64(mem)/(1<<30), bus, peers)
	}

	ctx, err := dev.RetainPrimary()
	if err != nil {
		return err
	}
	defer ctx.Release()

	// 1 MiB: memset, DtoH, HtoD, DtoD, DtoH.
	const size = 1 << 20
	a, err := ctx.MemAlloc(size)
	if err != nil {
		return err
	}
	defer ctx.MemFree(a)
	b, err := ctx.MemAlloc(size)
	if err != nil {
		return err
	}
	defer ctx.MemFree(b)
	host := make([]byte, size)
	if err := ctx.MemsetD8(a, 0x5a, size); err != nil {
		return err
	}
	if err := ctx.MemcpyDtoH(unsafe.Pointer(&host[0]), a, size); err != nil {
		return err
	}
	for i, v := range host {
		if v != 0x5a {
			return errors.Newf("memset: byte %d is %#x, want 0x5a", i, v)
		}
	}
	for i := range host {
		host[i] = byte(i*31 + 7)
	}
	if err := ctx.MemcpyHtoD(a, unsafe.Pointer(&host[0]), size); err != nil {
		return err
	}
	if err := ctx.MemcpyDtoD(b, a, size); err != nil {
		return err
	}
	back := make([]byte, size)
	if err := ctx.MemcpyDtoH(unsafe.Pointer(&back[0]), b, size); err != nil {
		return err
	}
	for i := range back {
		if back[i] != host[i] {
			return errors.Newf("HtoD/DtoD/DtoH round trip: byte %d is %#x, want %#x", i, back[i], host[i])
		}
	}
	free, total, err := ctx.MemGetInfo()
	if err != nil {
		return err
	}
	mt, err := ctx.PointerGetAttribute(cuda.PointerAttrMemoryType, a)
	if err != nil {
		return err
	}
	fmt.Printf("memory: 1 MiB memset/HtoD/DtoD/DtoH ok; memory type %d (2 = device); %.1f of %.1f GiB free\n",
		mt, float64(free)/(1<<30), float64(total)/(1<<30))

	h, err := ctx.IpcGetMemHandle(a)
	if err != nil {
		return err
	}
	fmt.Printf("ipc: handle %x...\n", h[:16])

	hp, err := ctx.MemHostAlloc(4096, cuda.HostAllocPortable|cuda.HostAllocDeviceMap)
	if err != nil {
		return err
	}
	hdp, err := ctx.MemHostGetDevicePointer(hp)
	if err != nil {
		return err
	}
	fmt.Printf("pinned: host %p mapped at device %#x\n", hp, uint64(hdp))
	if err := ctx.MemFreeHost(hp); err != nil {
		return err
	}

	// Module and kernel.
	image := []byte(builtinPTX)
	if ptxPath != "" {
		if image, err = os.ReadFile(ptxPath); err != nil {
			return errors.Wrap(err, "reading -ptx")
		}
	}
	mod, err := ctx.ModuleLoadData(image)
	if err != nil {
		return err
	}
	defer mod.Unload()
	fill, err := mod.Function(kernel)
	if err != nil {
		return err
	}
	const nfill = 100000
	const base = 1000
	var args cuda.Args
	args.Ptr(b).U32(nfill).U32(base)
	block := uint32(256)
	grid := uint32((nfill + block - 1) / block)
	if err := fill.Launch([3]uint32{grid, 1, 1}, [3]uint32{block, 1, 1}, 0, cuda.Stream{}, &args); err != nil {
		return err
	}
	if err := ctx.Synchronize(); err != nil {
		return err
	}
	out := make([]uint32, nfill)
	if err := ctx.MemcpyDtoH(unsafe.Pointer(&out[0]), b, nfill*4); err != nil {
		return err
	}
	for i, v := range out {
		if v != uint32(base+i) {
			return errors.Newf("kernel %s: out[%d] = %d, want %d", kernel, i, v, base+i)
		}
	}
	occ, err := fill.MaxActiveBlocksPerMultiprocessor(int(block), 0)
	if err != nil {
		return err
	}
	fmt.Printf("kernel %s: %d elements ok (%d blocks of %d/SM active)\n", kernel, nfill, occ, block)

	// Launch overhead: empty kernel, then the 3-argument kernel.
	empty, err := mod.Function(emptyName)
	if err != nil {
		return err
	}
	one := [3]uint32{1, 1, 1}
	for _, tc := range []struct {
		label string
		f     *cuda.Function
		grid  [3]uint32
		block [3]uint32
		args  *cuda.Args
	}{
		{emptyName + " (no args)", empty, one, one, nil},
		{kernel + " (3 args)", fill, one, [3]uint32{32, 1, 1}, &args},
	} {
		for i := 0; i < 100; i++ { // warm up
			if err := tc.f.Launch(tc.grid, tc.block, 0, cuda.Stream{}, tc.args); err != nil {
				return err
			}
		}
		if err := ctx.Synchronize(); err != nil {
			return err
		}
		start := time.Now()
		for i := 0; i < launches; i++ {
			if err := tc.f.Launch(tc.grid, tc.block, 0, cuda.Stream{}, tc.args); err != nil {
				return err
			}
		}
		queued := time.Since(start)
		if err := ctx.Synchronize(); err != nil {
			return err
		}
		all := time.Since(start)
		fmt.Printf("launch %-22s %d launches: %.2f us/launch (host loop), %.2f us/launch incl. final sync\n",
			tc.label, launches, us(queued)/float64(launches), us(all)/float64(launches))
	}
	return nil
}

func us(d time.Duration) float64 { return float64(d) / float64(time.Microsecond) }
