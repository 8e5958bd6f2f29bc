// Package testutil holds helpers shared by goshmem's tests.
package testutil

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// RunC compiles the C11 program src with gcc against the repository's
// include/ directory, runs it and returns its standard output. The layout
// tests use it to read offsets, sizes and constants from the C headers that
// Go code mirrors. gcc is on every dev and CI machine (scripts/deps.sh), so
// its absence fails the test rather than skipping it.
func RunC(t testing.TB, src string) string {
	t.Helper()
	cc, err := exec.LookPath("gcc")
	require.NoError(t, err, "gcc is needed to check C header layouts (scripts/deps.sh installs it)")
	_, self, _, _ := runtime.Caller(0)
	include := filepath.Join(filepath.Dir(self), "..", "..", "include")
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "l.c"), []byte(src), 0o600))
	bin := filepath.Join(dir, "l")
	out, err := exec.Command(cc, "-std=c11", "-I", include, "-o", bin, filepath.Join(dir, "l.c")).CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = exec.Command(bin).Output()
	require.NoError(t, err)
	return string(out)
}

// CValues is RunC for a program printing "name value" lines: it returns
// the values by name.
func CValues(t testing.TB, src string) map[string]uint64 {
	t.Helper()
	got := map[string]uint64{}
	for _, line := range strings.Split(strings.TrimSpace(RunC(t, src)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 2, "line %q", line)
		n, err := strconv.ParseUint(f[1], 10, 64)
		require.NoError(t, err)
		got[f[0]] = n
	}
	return got
}
