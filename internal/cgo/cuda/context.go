package cuda

// #include "shim.h"
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	errors "github.com/goshmem/goshmem/internal/xerrors"
)

// Context is a retained primary context of one device. Its methods are
// safe for concurrent use; each makes the context current on the calling
// thread inside the same cgo call as the driver call (see the package doc).
type Context struct {
	dev      Device
	h        C.CUcontext // immutable after RetainPrimary
	released atomic.Bool
	// borrowed: another library's context (CurrentContext), which Release
	// leaves to its owner.
	borrowed bool

	mu      sync.Mutex // guards the Do worker's start and stop
	reqs    chan doReq
	stop    chan struct{}
	stopped bool
}

type doReq struct {
	fn   func() error
	done chan doResult
}

type doResult struct {
	err      error
	panicked bool
	panicVal any
}

// RetainPrimary retains d's primary context (cuDevicePrimaryCtxRetain); pair
// it with Release. The primary context is shared with the CUDA runtime and
// with every other retain of the same device in this process.
func (d Device) RetainPrimary() (*Context, error) {
	h, err := d.handle("cuDevicePrimaryCtxRetain")
	if err != nil {
		return nil, err
	}
	var ctx C.CUcontext
	if err := check(C.goshmemi_cuDevicePrimaryCtxRetain(&ctx, h), "cuDevicePrimaryCtxRetain"); err != nil {
		return nil, errors.Wrapf(err, "device %d", int(d))
	}
	return &Context{dev: d, h: ctx}, nil
}

// CurrentContext returns the context current on the calling OS thread
// (cuCtxGetCurrent), or nil when there is none. Another library (the CUDA
// runtime under PyTorch, cuBLAS) may have made it current. When it is its
// device's primary context, the result retains it like RetainPrimary.
// Otherwise the result borrows it: Release then stops using it and leaves
// it to its owner, who must keep it alive until then. Only meaningful on a
// goroutine locked to its thread (runtime.LockOSThread).
func CurrentContext() (*Context, error) {
	if err := ready("cuCtxGetCurrent"); err != nil {
		return nil, err
	}
	var cur C.CUcontext
	if err := check(C.goshmemi_cuCtxGetCurrent(&cur), "cuCtxGetCurrent"); err != nil {
		return nil, err
	}
	if cur == nil {
		return nil, nil
	}
	var d C.CUdevice
	if err := check(C.goshmemi_cuCtxGetDevice(cur, &d), "cuCtxGetDevice"); err != nil {
		// A context destroyed while current (an earlier Init's, after its
		// Finalize) stays the thread's current handle: it is no context.
		if destroyed(err) {
			return nil, nil
		}
		return nil, err
	}
	p, err := Device(d).RetainPrimary()
	if err != nil {
		return nil, err
	}
	if p.h == cur {
		return p, nil
	}
	if err := p.Release(); err != nil {
		return nil, err
	}
	return &Context{dev: Device(d), h: cur, borrowed: true}, nil
}

// codeContextIsDestroyed is CUDA_ERROR_CONTEXT_IS_DESTROYED (Ref: cuda.h
// of CUDA 11.8, enum cudaError_enum).
const codeContextIsDestroyed = 709

// Borrowed reports whether c is another library's context that Release
// leaves alone (see CurrentContext).
func (c *Context) Borrowed() bool { return c.borrowed }

// ThreadContext is the context current on one OS thread at one moment
// (SaveThreadContext), to put back after work that changed it.
type ThreadContext struct{ h C.CUcontext }

// SaveThreadContext records the calling OS thread's current context (none
// is recorded as nil, and so is a destroyed one still current there, as in
// CurrentContext). Only meaningful on a locked goroutine.
func SaveThreadContext() (ThreadContext, error) {
	if err := ready("cuCtxGetCurrent"); err != nil {
		return ThreadContext{}, err
	}
	var cur C.CUcontext
	if err := check(C.goshmemi_cuCtxGetCurrent(&cur), "cuCtxGetCurrent"); err != nil || cur == nil {
		return ThreadContext{}, err
	}
	var d C.CUdevice
	if err := check(C.goshmemi_cuCtxGetDevice(cur, &d), "cuCtxGetDevice"); err != nil {
		if destroyed(err) {
			return ThreadContext{}, nil
		}
		return ThreadContext{}, err
	}
	return ThreadContext{h: cur}, nil
}

// Restore makes the recorded context current on the calling OS thread
// again (cuCtxSetCurrent; nil when none was current). A recorded context
// destroyed since (its owner released it) is no context: the thread is
// left with none.
func (tc ThreadContext) Restore() error {
	if err := ready("cuCtxSetCurrent"); err != nil {
		return err
	}
	err := check(C.goshmemi_cuCtxSetCurrent(tc.h), "cuCtxSetCurrent")
	if err != nil && tc.h != nil && destroyed(err) {
		return check(C.goshmemi_cuCtxSetCurrent(nil), "cuCtxSetCurrent")
	}
	return err
}

// destroyed reports whether err says a context handle names no live
// context (CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_CONTEXT_IS_DESTROYED).
func destroyed(err error) bool {
	var ce *Error
	return errors.As(err, &ce) && (ce.Code == CodeInvalidContext || ce.Code == codeContextIsDestroyed)
}

// Device returns the context's device.
func (c *Context) Device() Device { return c.dev }

// String names the context for messages ("cuda context of device 0").
func (c *Context) String() string { return fmt.Sprintf("cuda context of device %d", int(c.dev)) }

// live returns the context handle, or an error for call when the driver is
// not loaded or the context was released. One atomic load each: hot-path safe.
func (c *Context) live(call string) (C.CUcontext, error) {
	if !loaded.Load() {
		return nil, notLoaded(call)
	}
	if c == nil || c.released.Load() {
		return nil, errors.Wrapf(ErrReleased, "cuda: %s", call)
	}
	return c.h, nil
}

// SetCurrent makes c current on the calling OS thread (cuCtxSetCurrent).
// Only meaningful for a goroutine locked to its thread
// (runtime.LockOSThread), and only needed for code outside this package:
// this package's methods set the context themselves. Prefer Do.
func (c *Context) SetCurrent() error {
	h, err := c.live("cuCtxSetCurrent")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuCtxSetCurrent(h), "cuCtxSetCurrent")
}

// IsCurrent reports whether c is the current context of the calling OS
// thread (cuCtxGetCurrent). Only meaningful inside Do or on a goroutine
// locked to its thread.
func (c *Context) IsCurrent() (bool, error) {
	h, err := c.live("cuCtxGetCurrent")
	if err != nil {
		return false, err
	}
	var cur C.CUcontext
	if err := check(C.goshmemi_cuCtxGetCurrent(&cur), "cuCtxGetCurrent"); err != nil {
		return false, err
	}
	return cur == h, nil
}

// Do runs fn on a goroutine locked to one OS thread on which c is current,
// and returns fn's error (a panic in fn is re-raised in the caller). Calls of
// Do are serialized on that one thread. Use it for code that relies on the
// current context across several calls, e.g. cgo into another CUDA library.
// fn must not call Do or Release on the same context (it would deadlock).
func (c *Context) Do(fn func() error) error {
	if _, err := c.live("Context.Do"); err != nil {
		return err
	}
	reqs, stop, err := c.worker()
	if err != nil {
		return err
	}
	done := make(chan doResult, 1)
	select {
	case reqs <- doReq{fn: fn, done: done}:
	case <-stop:
		return errors.Wrapf(ErrReleased, "cuda: Context.Do")
	}
	r := <-done
	if r.panicked {
		panic(r.panicVal)
	}
	return r.err
}

// worker starts the Do goroutine on first use.
func (c *Context) worker() (chan doReq, chan struct{}, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, nil, errors.Wrapf(ErrReleased, "cuda: Context.Do")
	}
	if c.reqs == nil {
		c.reqs = make(chan doReq)
		c.stop = make(chan struct{})
		go c.serve(c.reqs, c.stop)
	}
	return c.reqs, c.stop, nil
}

// serve is the Do worker. It sets the context before every request (fn may
// have changed it) and exits still locked, so the runtime retires the thread
// together with its CUDA thread-local state.
func (c *Context) serve(reqs chan doReq, stop chan struct{}) {
	runtime.LockOSThread()
	for {
		select {
		case <-stop:
			C.goshmemi_cuCtxSetCurrent(nil)
			return
		case r := <-reqs:
			r.done <- c.run(r.fn)
		}
	}
}

func (c *Context) run(fn func() error) (res doResult) {
	defer func() {
		if p := recover(); p != nil {
			res = doResult{panicked: true, panicVal: p}
		}
	}()
	if err := check(C.goshmemi_cuCtxSetCurrent(c.h), "cuCtxSetCurrent"); err != nil {
		return doResult{err: errors.Wrapf(err, "cuda: Context.Do on %s", c)}
	}
	return doResult{err: fn()}
}

// Release stops the Do worker and releases the primary context
// (cuDevicePrimaryCtxRelease_v2). Later calls on c, and on modules, streams
// and events made from it, fail with ErrReleased. Releasing twice is a no-op.
// The driver destroys the primary context when its last retain is released,
// freeing everything allocated in it.
func (c *Context) Release() error {
	if c == nil || !c.released.CompareAndSwap(false, true) {
		return nil
	}
	c.mu.Lock()
	c.stopped = true
	if c.stop != nil {
		close(c.stop)
	}
	c.mu.Unlock()
	if c.borrowed {
		return nil
	}
	if err := ready("cuDevicePrimaryCtxRelease"); err != nil {
		return err
	}
	var d C.CUdevice
	if err := check(C.goshmemi_cuDeviceGet(&d, C.int(c.dev)), "cuDeviceGet"); err != nil {
		return err
	}
	return check(C.goshmemi_cuDevicePrimaryCtxRelease(d), "cuDevicePrimaryCtxRelease_v2")
}

// Synchronize waits for all work in the context (cuCtxSynchronize). A kernel
// fault of earlier work is reported here (see IsStickyFault).
func (c *Context) Synchronize() error {
	h, err := c.live("cuCtxSynchronize")
	if err != nil {
		return err
	}
	return check(C.goshmemi_cuCtxSynchronize(h), "cuCtxSynchronize")
}

// EnablePeerAccess lets kernels in c access memory allocated in peer
// (cuCtxEnablePeerAccess; one direction only). Enabling it again is not an
// error (CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED is taken as success).
func (c *Context) EnablePeerAccess(peer *Context) error {
	h, err := c.live("cuCtxEnablePeerAccess")
	if err != nil {
		return err
	}
	p, err := peer.live("cuCtxEnablePeerAccess")
	if err != nil {
		return err
	}
	r := C.goshmemi_cuCtxEnablePeerAccess(h, p, 0)
	if r == C.CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED {
		return nil
	}
	if err := check(r, "cuCtxEnablePeerAccess"); err != nil {
		return errors.Wrapf(err, "device %d -> device %d", int(c.dev), int(peer.dev))
	}
	return nil
}
