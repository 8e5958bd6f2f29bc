package runtime

import (
	"os"
	"testing"

	"github.com/goshmem/goshmem/internal/testutil"
)

// TestMain builds the fake CUDA driver of the gpu tests once, on first
// use, for all of them (testutil.ShareFakeCUDA).
func TestMain(m *testing.M) {
	removeFake := testutil.ShareFakeCUDA()
	code := m.Run()
	removeFake()
	os.Exit(code)
}
