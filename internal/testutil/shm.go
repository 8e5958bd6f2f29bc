package testutil

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ShmLeaks lists what of this process still refers to a file in dir
// (/dev/shm): a mapping or an open descriptor (a heap region not closed),
// or a name left by the unnamed regions' fallback (goshmem-anon-<pid>-*, a
// failed unlink), which it removes. Tests' TestMain fail the run on any.
func ShmLeaks(dir string) []string {
	var left []string
	names, _ := filepath.Glob(filepath.Join(dir, fmt.Sprintf("goshmem-anon-%d-*", os.Getpid())))
	for _, p := range names {
		left = append(left, "file "+p)
		_ = os.Remove(p)
	}
	fds, _ := os.ReadDir("/proc/self/fd")
	for _, e := range fds {
		if link, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(link, dir+"/") {
			left = append(left, "fd "+e.Name()+" -> "+link)
		}
	}
	maps, _ := os.ReadFile("/proc/self/maps")
	for _, line := range strings.Split(string(maps), "\n") {
		if strings.Contains(line, " "+dir+"/") {
			left = append(left, "mapping "+line)
		}
	}
	return left
}
