package symmetric

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

// testPrefix names every shared-memory object the tests create, so that
// TestMain can find leftovers of this process (and only this process).
var testPrefix = fmt.Sprintf("goshmem-symtest-%d-", os.Getpid())

var testSeq atomic.Int64

// testName returns a fresh region name for t.
func testName(t testing.TB) string {
	t.Helper()
	return fmt.Sprintf("%s%d", testPrefix, testSeq.Add(1))
}

// TestMain fails the run if a test left a shared-memory object behind.
// Started as a helper process (childRoleEnv set), it plays that role
// instead of running the tests.
func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	left, _ := filepath.Glob(filepath.Join("/dev/shm", testPrefix+"*"))
	if len(left) > 0 {
		fmt.Fprintf(os.Stderr, "leaked shared-memory objects: %v\n", left)
		for _, p := range left {
			_ = os.Remove(p)
		}
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
