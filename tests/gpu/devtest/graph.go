//go:build !nostream

package main

// CUDA graph capture and replay of the stream calls: a PE captures a
// stream's work (a slow fill, PutOnStream to the right, QuietOnStream,
// BarrierAllOnStream, a check kernel) into a graph, in global and in
// relaxed capture mode, and replays it several times; before each replay
// the destination is cleared, so a replay whose barrier did not wait for
// the left neighbour's put reads zeros. The graph API is loaded here with
// dlopen (internal/cgo/cuda has no graph calls): the same libcuda the
// runtime loaded (GOSHMEM_LIBCUDA, else libcuda.so.1), so the handles are
// the runtime's.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

// Ref: CUDA 12.x cuda.h: CUresult is an enum (0 = CUDA_SUCCESS); CUstream,
// CUcontext, CUgraph and CUgraphExec are pointers; CUstreamCaptureMode
// CU_STREAM_CAPTURE_MODE_GLOBAL = 0, _THREAD_LOCAL = 1, _RELAXED = 2.
// cuStreamBeginCapture is the macro for cuStreamBeginCapture_v2 (CUDA 10.1).
typedef int (*dt_begin_t)(void *stream, int mode);
typedef int (*dt_end_t)(void *stream, void **graph);
typedef int (*dt_inst_t)(void **exec, void *graph, unsigned long long flags);
typedef int (*dt_launch_t)(void *exec, void *stream);
typedef int (*dt_destroy_t)(void *obj);
typedef int (*dt_getctx_t)(void *stream, void **ctx);
typedef int (*dt_push_t)(void *ctx);
typedef int (*dt_pop_t)(void **ctx);

static struct {
	dt_begin_t begin;
	dt_end_t end;
	dt_inst_t inst;
	dt_launch_t launch;
	dt_destroy_t exec_destroy, graph_destroy;
	dt_getctx_t getctx;
	dt_push_t push;
	dt_pop_t pop;
} dt;

// dt_load resolves the graph calls; it returns the name of the first one
// missing, or NULL.
static const char *dt_load(const char *path)
{
	void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
	if (!h)
		return "dlopen";
#define DT_SYM(f, name)                       \
	if (!(*(void **)&dt.f = dlsym(h, name))) \
		return name;
	DT_SYM(begin, "cuStreamBeginCapture_v2")
	DT_SYM(end, "cuStreamEndCapture")
	DT_SYM(inst, "cuGraphInstantiateWithFlags")
	DT_SYM(launch, "cuGraphLaunch")
	DT_SYM(exec_destroy, "cuGraphExecDestroy")
	DT_SYM(graph_destroy, "cuGraphDestroy")
	DT_SYM(getctx, "cuStreamGetCtx")
	DT_SYM(push, "cuCtxPushCurrent_v2")
	DT_SYM(pop, "cuCtxPopCurrent_v2")
#undef DT_SYM
	return NULL;
}

// Each call runs with the stream's context current on this thread (the
// runtime's own calls make it current on theirs), and leaves it as it was.
static int dt_with_ctx(void *stream, void **ctx)
{
	int rc = dt.getctx(stream, ctx);
	return rc ? rc : dt.push(*ctx);
}
static int dt_begin(uintptr_t s, int mode)
{
	void *ctx, *old, *stream = (void *)s;
	int rc = dt_with_ctx(stream, &ctx);
	if (rc)
		return rc;
	rc = dt.begin(stream, mode);
	dt.pop(&old);
	return rc;
}
static int dt_end_instantiate(uintptr_t s, uintptr_t *exec)
{
	void *ctx, *old, *graph = NULL, *e = NULL, *stream = (void *)s;
	int rc = dt_with_ctx(stream, &ctx);
	if (rc)
		return rc;
	rc = dt.end(stream, &graph);
	if (rc == 0) {
		rc = dt.inst(&e, graph, 0);
		*exec = (uintptr_t)e;
		dt.graph_destroy(graph);
	}
	dt.pop(&old);
	return rc;
}
static int dt_launch(uintptr_t exec, uintptr_t s)
{
	void *ctx, *old, *stream = (void *)s;
	int rc = dt_with_ctx(stream, &ctx);
	if (rc)
		return rc;
	rc = dt.launch((void *)exec, stream);
	dt.pop(&old);
	return rc;
}
static int dt_exec_destroy(uintptr_t exec) { return dt.exec_destroy((void *)exec); }
*/
import "C"

import (
	"fmt"
	"os"
	goruntime "runtime"
	"unsafe"

	"github.com/goshmem/goshmem/shmem"
)

// graphReplays is how many times each captured graph is launched.
const graphReplays = 5

var graphModes = []struct {
	name string
	mode C.int
}{
	{"global capture", 0},
	{"relaxed capture", 2},
}

// graphAPIErr resolves the driver's graph calls once; the error names
// the library or the call missing.
var graphAPIErr = func() func() error {
	var done bool
	var err error
	return func() error {
		if done {
			return err
		}
		done = true
		lib := os.Getenv("GOSHMEM_LIBCUDA")
		if lib == "" {
			lib = "libcuda.so.1"
		}
		cs := C.CString(lib)
		defer C.free(unsafe.Pointer(cs))
		if m := C.dt_load(cs); m != nil {
			err = fmt.Errorf("%s: no %s", lib, C.GoString(m))
		}
		return err
	}
}()

// streamGraph: the stream RMA and barrier calls captured into a CUDA graph
// and replayed, in both capture modes.
func streamGraph() error {
	if err := collSetup(); err != nil {
		return err
	}
	if err := graphAPIErr(); err != nil {
		return fmt.Errorf("the driver's graph API: %w", err)
	}
	a, b, free, err := streamPair()
	if err != nil {
		return err
	}
	defer free()
	zeros := make([]int32, streamN)
	for mi, gm := range graphModes {
		base := func(pe int) int { return pe*1_000_000 + (mi+1)*1000 }
		s, err := shmem.NewStream()
		if err != nil {
			return err
		}
		err = captureAndReplay(s, gm.mode, func() error {
			if err := launchOn(s, "s_fill", a, int32(streamN), int32(base(me)), spinNS); err != nil {
				return err
			}
			if err := shmem.PutOnStream(s, b, 0, a, 0, streamN, right); err != nil {
				return err
			}
			if err := shmem.QuietOnStream(s); err != nil {
				return err
			}
			if err := shmem.BarrierAllOnStream(s); err != nil {
				return err
			}
			return launchOn(s, "s_check", b, int32(streamN), int32(base(left)), res)
		}, func() error { // before each replay: no data from an earlier one
			if err := zeroRes(); err != nil {
				return err
			}
			if err := shmem.Put(b, 0, zeros, me); err != nil {
				return err
			}
			return shmem.BarrierAll()
		}, func(r int) error { // after each replay
			if err := resCheck(fmt.Sprintf("replay %d", r), base(left)); err != nil {
				return err
			}
			return shmem.BarrierAll()
		})
		_ = s.Destroy()
		if err != nil {
			return fmt.Errorf("%s: %w", gm.name, err)
		}
	}
	return nil
}

// captureAndReplay captures what enqueue puts on s in mode, then launches
// the graph graphReplays times, each between before and after(replay).
func captureAndReplay(s *shmem.Stream, mode C.int, enqueue, before func() error, after func(int) error) error {
	goruntime.LockOSThread()
	defer goruntime.UnlockOSThread()
	h := C.uintptr_t(s.Handle())
	if rc := C.dt_begin(h, mode); rc != 0 {
		return fmt.Errorf("cuStreamBeginCapture: CUresult %d", int(rc))
	}
	errq := enqueue()
	var exec C.uintptr_t
	rc := C.dt_end_instantiate(h, &exec)
	if errq != nil {
		return fmt.Errorf("while capturing: %w", errq)
	}
	if rc != 0 {
		return fmt.Errorf("cuStreamEndCapture/cuGraphInstantiateWithFlags: CUresult %d", int(rc))
	}
	defer C.dt_exec_destroy(exec)
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	for r := 1; r <= graphReplays; r++ {
		if err := before(); err != nil {
			return err
		}
		if rc := C.dt_launch(exec, h); rc != 0 {
			return fmt.Errorf("replay %d: cuGraphLaunch: CUresult %d", r, int(rc))
		}
		if err := s.Synchronize(); err != nil {
			return fmt.Errorf("replay %d: %w", r, err)
		}
		if err := after(r); err != nil {
			return err
		}
	}
	return nil
}
