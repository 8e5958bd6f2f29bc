package runtime

import (
	"encoding/binary"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/gpulib"
)

// gpuLibLoadBusy: goshmem's kernel library is loaded at Init, not on a
// PE's first library call. On a GPU a module load may wait until no
// kernel runs (under MPS: no kernel of any process on the GPU), so a PE
// that loaded the library on its first call (a QuietOnStream after a
// PutOnStream's copy) while a faster PE's BarrierAllOnStream kernel
// waited for it would wait for that kernel, which waits for it.
// The case runs n PEs on one fake device with FAKECUDA_BUSY_LOAD=fail,
// where such a load fails: PE 0 runs the library's barrier kernel on the
// world team; every other PE waits until PE 0's arrival is in its own
// psync word (PE 0's kernel runs), then makes its first library calls, a
// quiet and the barrier. A PE whose call fails stores its arrival in PE
// 0's psync from the host, so PE 0's kernel ends and the case reports
// the error instead of hanging.
func gpuLibLoadBusy(t *testing.T, n int) {
	got := fakeJob(t, n, map[string]string{"GOSHMEM_GPU": "on"}, nil, func(r *Runtime) error {
		atInit := r.gpuState.lib.loaded
		if err := r.Boot.Barrier(); err != nil { // as shmem.Init's first barrier
			return err
		}
		s, err := r.NewStream()
		if err != nil {
			return err
		}
		defer s.Destroy()
		world := [gpulib.NArgs]uint64{0} // GOSHMEM_TEAM_WORLD
		if r.Me == 0 {
			err = r.LibLaunchColl(s, gpulib.Barrier, &world, 0, "BarrierAllOnStream")
		} else {
			// PE 0's flat sync stores its epoch (1: the world team's first
			// sync) into word 0 of team slot 0's psync line on every other
			// member, then waits for theirs.
			if err := waitWord(r, 0, 1); err != nil {
				return err
			}
			var none [gpulib.NArgs]uint64
			err = r.LibLaunch(s, gpulib.Quiet, &none, "QuietOnStream")
			if err == nil {
				err = r.LibLaunchColl(s, gpulib.Barrier, &world, 0, "BarrierAllOnStream")
			}
			if err != nil {
				one := binary.LittleEndian.AppendUint64(nil, 1)
				return fmt.Errorf("PE %d, while PE 0's barrier kernel waits: %w (releasing it: %v)",
					r.Me, err, r.GPU.Put(nil, 0, uint64(8*r.Me), one))
			}
		}
		if err == nil {
			err = r.SyncStream(s, "Stream.Synchronize")
		}
		if err == nil && !atInit {
			err = fmt.Errorf("PE %d: the kernel library was not loaded at Init (%v)", r.Me, r.gpuState.lib.err)
		}
		return err
	})
	for i, p := range got {
		require.NoError(t, p.err, "PE %d: New", i)
		assert.NoError(t, p.work, "PE %d", i)
	}
}

// waitWord waits until the 8-byte word at heap offset off of this PE's
// GPU heap is at least want; a minute without it is an error.
func waitWord(r *Runtime, off, want uint64) error {
	var b [8]byte
	for end := time.Now().Add(time.Minute); ; {
		if err := r.GPU.Get(nil, b[:], r.Me, off); err != nil {
			return err
		}
		if v := binary.LittleEndian.Uint64(b[:]); v >= want {
			return nil
		} else if time.Now().After(end) {
			return fmt.Errorf("PE %d: heap word at offset %d is %d after a minute, want at least %d", r.Me, off, v, want)
		}
		time.Sleep(100 * time.Microsecond)
	}
}
