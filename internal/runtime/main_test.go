package runtime

import (
	"fmt"
	"os"
	"testing"

	"github.com/goshmem/goshmem/internal/testutil"
)

// TestMain builds the fake CUDA driver of the gpu tests once, on first
// use, for all of them (testutil.ShareFakeCUDA).
func TestMain(m *testing.M) {
	fake, err := os.MkdirTemp("", "goshmem-fakecuda-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	testutil.ShareFakeCUDA(fake)
	code := m.Run()
	_ = os.RemoveAll(fake)
	os.Exit(code)
}
