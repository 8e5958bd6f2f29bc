//go:build linux

package symmetric

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMain fails the run if a test left a region behind. Started as a
// helper process (childRoleEnv set), it plays that role instead of running
// the tests.
func TestMain(m *testing.M) {
	if role := os.Getenv(childRoleEnv); role != "" {
		os.Exit(runChild(role))
	}
	code := m.Run()
	if left := leakedRegions(); len(left) > 0 {
		fmt.Fprintf(os.Stderr, "leaked regions:\n  %s\n", strings.Join(left, "\n  "))
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

// leakedRegions lists what of this process still refers to a file in
// ShmDir: a mapping or an fd (a region not closed), or a name of
// CreateAnon's fallback (goshmem-anon-<pid>-*, a failed unlink), which it
// removes.
func leakedRegions() []string {
	var left []string
	names, _ := filepath.Glob(filepath.Join(ShmDir, fmt.Sprintf("goshmem-anon-%d-*", os.Getpid())))
	for _, p := range names {
		left = append(left, "file "+p)
		_ = os.Remove(p)
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, e := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(link, ShmDir+"/") {
			left = append(left, "fd "+e.Name()+" -> "+link)
		}
	}
	maps, _ := os.ReadFile("/proc/self/maps")
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.Contains(line, " "+ShmDir+"/") {
			left = append(left, "mapping "+line)
		}
	}
	return left
}
