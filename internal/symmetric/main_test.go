//go:build linux

package symmetric

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/goshmem/goshmem/internal/testutil"
)

// TestMain fails the run if a test left a region behind. Started as a
// helper process (childRoleEnv set), it plays that role instead of running
// the tests.
func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	if left := testutil.ShmLeaks(ShmDir); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "leaked regions:\n  %s\n", strings.Join(left, "\n  "))
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}
