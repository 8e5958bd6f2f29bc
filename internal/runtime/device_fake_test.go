package runtime

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"sort"
	"strings"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/cgo/cuda"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/testutil"
)

// The GPU a PE chooses (WithDevice, GOSHMEM_DEVICE, the calling thread's
// current context, the local rank) on the fake CUDA driver with several
// devices. As in TestGPUFake each case runs in a process of its own (the
// fake reads FAKECUDA_DEVICES at cuInit) and ends with no live object in
// the fake.
var deviceCases = map[string]struct {
	env []string
	run func(t *testing.T)
}{
	"local-rank":   {[]string{"FAKECUDA_DEVICES=3"}, deviceLocalRank},
	"env":          {[]string{"FAKECUDA_DEVICES=3"}, deviceEnv},
	"option":       {[]string{"FAKECUDA_DEVICES=3"}, deviceOption},
	"out-of-range": {[]string{"FAKECUDA_DEVICES=3"}, deviceOutOfRange},
	"current":      {[]string{"FAKECUDA_DEVICES=3"}, deviceCurrent},
	"current-kept": {[]string{"FAKECUDA_DEVICES=3"}, deviceCurrentKept},
}

const deviceCaseEnv = "TEST_FAKE_DEVICE_CASE"

func TestDeviceChoiceFake(t *testing.T) {
	if os.Getenv(deviceCaseEnv) != "" || os.Getenv(fakeCaseEnv) != "" {
		t.Skip("a child process runs only its own case")
	}
	lib := testutil.FakeCUDA(t)
	names := make([]string, 0, len(deviceCases))
	for n := range deviceCases {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDeviceChoiceFakeCase$", "-test.v", "-test.count=1", "-test.timeout=100s")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "FAKECUDA_") && !strings.HasPrefix(kv, "GOSHMEM_") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, deviceCaseEnv+"="+name, "GOSHMEM_LIBCUDA="+lib, "FAKECUDA_LEAKS="+filepath.Join(t.TempDir(), "live"))
			cmd.Env = append(cmd.Env, deviceCases[name].env...)
			out, err := cmd.CombinedOutput()
			require.NoError(t, ctx.Err(), "case %s did not end; output:\n%s", name, out)
			require.NoError(t, err, "case %s; output:\n%s", name, out)
			require.Contains(t, string(out), "--- PASS: TestDeviceChoiceFakeCase", "the case did not run; output:\n%s", out)
		})
	}
}

// TestDeviceChoiceFakeCase is one case of TestDeviceChoiceFake.
func TestDeviceChoiceFakeCase(t *testing.T) {
	name := os.Getenv(deviceCaseEnv)
	if name == "" {
		t.Skip("run by TestDeviceChoiceFake in a process of its own")
	}
	c, ok := deviceCases[name]
	require.True(t, ok, "no case %q", name)
	testutil.FakeLib(t)
	c.run(t)
	if t.Failed() {
		return
	}
	live, ok := testutil.FakeCUDALive(t, os.Getenv("FAKECUDA_LEAKS"), os.Getpid())
	if !ok {
		return
	}
	for k, n := range live {
		assert.Zero(t, n, "the fake driver still holds %d %s after every Runtime closed", n, k)
	}
}

// devicePE is one PE's outcome of deviceJob.
type devicePE struct {
	err  error
	dev  int
	why  string
	info string
	// kept: the context current on the PE's thread before New is current
	// again after it (nil before: none is current after).
	kept bool
	// same: the GPU heap uses the context that was current before New.
	same bool
}

// deviceJob runs New on n PEs (goroutines locked to their threads) with
// GOSHMEM_GPU=on plus settings(pe) and Config.Device = option(pe); when
// current(pe) >= 0 that device's primary context is made current on the
// PE's thread first, as a framework would before initializing goshmem.
func deviceJob(t *testing.T, n int, settings func(pe int) map[string]string, option, current func(pe int) int) []devicePE {
	t.Helper()
	lib := os.Getenv("GOSHMEM_LIBCUDA")
	require.NoError(t, cuda.LoadLibrary(lib))
	out := make([]devicePE, n)
	_ = local.Run(n, func(b bootstrap.Bootstrap) error {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		me := b.Rank()
		p := &out[me]
		vals := map[string]string{"GOSHMEM_LIBCUDA": lib, "GOSHMEM_DEVICE_HEAP_SIZE": "4M", "GOSHMEM_GPU": "on"}
		if settings != nil {
			for k, v := range settings(me) {
				vals[k] = v
			}
		}
		s, err := env.Read(func(k string) (string, bool) { v, ok := vals[k]; return v, ok })
		if err != nil {
			p.err = err
			return nil
		}
		var before *cuda.Context
		if current != nil && current(me) >= 0 {
			if before, err = cuda.Device(current(me)).RetainPrimary(); err != nil {
				p.err = err
				return nil
			}
			defer func() { _ = before.Release() }()
			if err := before.SetCurrent(); err != nil {
				p.err = err
				return nil
			}
		}
		cfg := Config{HeapSize: 8 << 20}
		if option != nil && option(me) != -1 {
			d := option(me)
			cfg.Device = &d
		}
		r, err := New(b, s, cfg)
		if err != nil {
			p.err = err
			return nil
		}
		defer r.Close()
		var info strings.Builder
		for _, l := range r.gpuBackendInfo() {
			info.WriteString(l + "\n")
		}
		p.dev, p.why, p.info = int(r.GPU.Dev), r.GPU.DevWhy, info.String()
		cur, err := cuda.SaveThreadContext()
		if err != nil {
			p.err = err
			return nil
		}
		if before != nil {
			p.kept, _ = before.IsCurrent()
			p.same = r.GPU.Ctx.Device() == before.Device()
			if ok, _ := r.GPU.Ctx.IsCurrent(); ok != p.same {
				p.err = fmt.Errorf("PE %d: the GPU heap's context is current: %v; want %v", me, ok, p.same)
			}
			_ = before.SetCurrent()
		} else {
			p.kept = cur == (cuda.ThreadContext{})
		}
		return nil
	})
	return out
}

// gpuBackendInfo is the GPU heap backend's GOSHMEM_INFO lines.
func (r *Runtime) gpuBackendInfo() []string {
	for _, b := range r.Backends() {
		if g, ok := b.(*gpuBackend); ok {
			return g.Info()
		}
	}
	return nil
}

// Without a choice PE k uses GPU k mod 3, and GOSHMEM_INFO says so.
func deviceLocalRank(t *testing.T) {
	got := deviceJob(t, 4, nil, nil, nil)
	for me, p := range got {
		require.NoError(t, p.err, "PE %d", me)
		assert.Equal(t, me%3, p.dev, "PE %d", me)
		assert.Equal(t, fmt.Sprintf("local rank %d modulo 3 devices", me), p.why)
		assert.Contains(t, p.info, fmt.Sprintf("PE %d: GPU %d (Fake H200 #%d, PCI 0000:%02x:00.0) chosen by local rank %d modulo 3 devices", me, me%3, me%3, 0x18+me%3, me))
		assert.True(t, p.kept, "PE %d: Init left a context current on its thread", me)
	}
}

// GOSHMEM_DEVICE picks the GPU, per PE; it wins over a current context.
func deviceEnv(t *testing.T) {
	got := deviceJob(t, 2, func(pe int) map[string]string {
		return map[string]string{"GOSHMEM_DEVICE": fmt.Sprint(2 - pe)}
	}, nil, func(pe int) int { return 0 })
	for me, p := range got {
		require.NoError(t, p.err, "PE %d", me)
		assert.Equal(t, 2-me, p.dev, "PE %d", me)
		assert.Equal(t, "GOSHMEM_DEVICE", p.why)
		assert.Contains(t, p.info, "chosen by GOSHMEM_DEVICE;")
		assert.True(t, p.kept, "PE %d: the thread's own context is no longer current after Init", me)
	}
}

// WithDevice (Config.Device) wins over GOSHMEM_DEVICE.
func deviceOption(t *testing.T) {
	got := deviceJob(t, 2, func(int) map[string]string { return map[string]string{"GOSHMEM_DEVICE": "0"} },
		func(pe int) int { return 1 + pe }, nil)
	for me, p := range got {
		require.NoError(t, p.err, "PE %d", me)
		assert.Equal(t, 1+me, p.dev, "PE %d", me)
		assert.Equal(t, "WithDevice", p.why)
	}
}

// An ordinal out of range fails Init with ErrInvalidArgument naming the
// PE, the argument or setting and the valid range.
func deviceOutOfRange(t *testing.T) {
	for _, c := range []struct {
		settings map[string]string
		option   int
		want     string
	}{
		{map[string]string{"GOSHMEM_DEVICE": "3"}, -1, "PE 0: Init: GOSHMEM_DEVICE=3: no such GPU; this node has 3, valid range [0, 3)"},
		{nil, 7, "PE 0: Init: WithDevice=7: no such GPU; this node has 3, valid range [0, 3)"},
		// a negative ordinal names the valid range too
		{nil, -2, "PE 0: Init: WithDevice=-2: no such GPU; this node has 3, valid range [0, 3)"},
		{map[string]string{"GOSHMEM_DEVICE": "-1"}, -1, "PE 0: Init: GOSHMEM_DEVICE=-1: no such GPU; this node has 3, valid range [0, 3)"},
		{map[string]string{"GOSHMEM_DEVICE": "one"}, -1, `PE 0: Init: GOSHMEM_DEVICE="one"; must be a device ordinal, at least 0`},
	} {
		got := deviceJob(t, 1, func(int) map[string]string { return c.settings }, func(int) int { return c.option }, nil)
		require.Error(t, got[0].err, c.want)
		assert.Contains(t, got[0].err.Error(), c.want)
		assert.True(t, errors.Is(got[0].err, errs.ErrInvalidArgument), "%v", got[0].err)
	}
	// Under GOSHMEM_GPU=auto too: a bad ordinal is the program's mistake,
	// not a missing GPU.
	got := deviceJob(t, 1, func(int) map[string]string {
		return map[string]string{"GOSHMEM_GPU": "auto", "GOSHMEM_DEVICE": "9"}
	}, nil, nil)
	require.Error(t, got[0].err)
	assert.True(t, errors.Is(got[0].err, errs.ErrInvalidArgument), "%v", got[0].err)
	// A bad ordinal on one PE fails Init on every PE, naming that PE, its
	// value and the valid range.
	got = deviceJob(t, 2, func(pe int) map[string]string {
		return map[string]string{"GOSHMEM_DEVICE": fmt.Sprint([]int{0, -5}[pe])}
	}, nil, nil)
	for me, p := range got {
		require.Error(t, p.err, "PE %d", me)
		assert.True(t, errors.Is(p.err, errs.ErrInvalidArgument), "PE %d: %v", me, p.err)
		assert.Contains(t, p.err.Error(), "PE 1: Init: GOSHMEM_DEVICE=-5: no such GPU; this node has 3, valid range [0, 3)", "PE %d", me)
	}
}

// A context current on the thread calling Init decides the GPU, and the
// GPU heap uses that very context; PEs without one fall back to the local
// rank.
func deviceCurrent(t *testing.T) {
	got := deviceJob(t, 2, nil, nil, func(pe int) int {
		if pe == 0 {
			return 2
		}
		return -1
	})
	require.NoError(t, got[0].err)
	assert.Equal(t, 2, got[0].dev)
	assert.Equal(t, "the calling thread's current CUDA context", got[0].why)
	assert.True(t, got[0].same && got[0].kept)
	require.NoError(t, got[1].err)
	assert.Equal(t, 1, got[1].dev)
	assert.Equal(t, "local rank 1 modulo 3 devices", got[1].why)
}

// WithDevice names another GPU than the current context's: Init uses it
// and leaves the thread's context current as it was.
func deviceCurrentKept(t *testing.T) {
	got := deviceJob(t, 1, nil, func(int) int { return 0 }, func(int) int { return 1 })
	require.NoError(t, got[0].err)
	assert.Equal(t, 0, got[0].dev)
	assert.False(t, got[0].same)
	assert.True(t, got[0].kept, "Init replaced the thread's current context")
}
