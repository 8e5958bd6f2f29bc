package runtime

import (
	stderrors "errors"
	"fmt"
	"sync"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/bootstrap/local"
	"github.com/goshmem/goshmem/internal/env"
	"github.com/goshmem/goshmem/internal/errs"
)

// A failure carried by an exchange keeps its sentinel, its text and its
// hints on every other PE.
func TestFailureCarriesHints(t *testing.T) {
	err := errs.Hint(errs.ErrHeapExhausted, "lower GOSHMEM_SYMMETRIC_SIZE", 3, "Init", "no room")
	err = errors.WithHint(err, "or enlarge /dev/shm")
	st, body, ok := decodeStatuses(encodeStatuses([]*entry{{err: err, st: stFailed}}), 1)
	require.True(t, ok)
	require.Equal(t, stFailed, st[0])
	f := newFailure(3, "symmetric heap", body[0])
	assert.Equal(t, "PE 3: Init: no room (symmetric heap)", f.text, "said once: the PE, the sentinel")
	assert.Equal(t, errs.ErrHeapExhausted, f.sentinel)
	assert.Equal(t, []string{"lower GOSHMEM_SYMMETRIC_SIZE", "or enlarge /dev/shm"}, f.hints)
	assert.Equal(t, err.Error(), errText(body[0]))
}

// Config.Local (a bad GOSHMEM_* value found before the bootstrap) on one
// PE fails New on every PE, each naming that PE, matching its sentinel
// and carrying its hint.
func TestNewLocalFailureOnOnePE(t *testing.T) {
	const n = 3
	boots, err := local.NewJob(n)
	require.NoError(t, err)
	settings, err := env.Read(func(name string) (string, bool) {
		if name == "GOSHMEM_GPU" {
			return "off", true
		}
		return "", false
	})
	require.NoError(t, err)
	bad := errs.Mark(errors.WithHint(errors.New(`env: GOSHMEM_DEBUG="2": not a boolean`), "debug checks"), errs.ErrInvalidArgument)
	errList := make([]error, n)
	var wg sync.WaitGroup
	for pe := 0; pe < n; pe++ {
		wg.Add(1)
		go func(pe int) {
			defer wg.Done()
			cfg := Config{HeapSize: 1 << 20}
			if pe == 1 {
				cfg.Local = bad
			}
			r, err := New(boots[pe], settings, cfg)
			if r != nil {
				r.Close()
			}
			errList[pe] = err
		}(pe)
	}
	wg.Wait()
	for pe, err := range errList {
		require.Error(t, err, "PE %d", pe)
		assert.True(t, stderrors.Is(err, errs.ErrInvalidArgument), "PE %d: %v", pe, err)
		assert.Contains(t, err.Error(), fmt.Sprintf("PE %d: Init: ", pe))
		assert.Contains(t, err.Error(), `PE 1: Init: environment: env: GOSHMEM_DEBUG="2"`, "PE %d", pe)
		assert.Contains(t, errors.GetAllHints(err), "debug checks", "PE %d", pe)
	}
}
