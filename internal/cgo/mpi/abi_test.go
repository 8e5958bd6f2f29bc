package mpi

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// abiProbe prints, from a real mpi.h, the constants and predefined handles
// that abi.h declares by hand (no linking: only the preprocessor and
// compile-time constants are read).
const abiProbe = `#include <stdio.h>
#include <mpi.h>
#include "abi.h"
#define STR_(x) #x
#define STR(x) STR_(x)
int main(void)
{
	printf("SUCCESS %d %d\n", MPI_SUCCESS, GOSHMEMI_MPI_SUCCESS);
	printf("THREAD %d %d %d %d\n", MPI_THREAD_SINGLE, MPI_THREAD_FUNNELED, MPI_THREAD_SERIALIZED, MPI_THREAD_MULTIPLE);
	printf("SHARED %d\n", MPI_COMM_TYPE_SHARED);
	printf("ERRSTR %d %d\n", MPI_MAX_ERROR_STRING <= GOSHMEMI_MPI_MAX_ERROR_STRING, MPI_MAX_LIBRARY_VERSION_STRING <= GOSHMEMI_MPI_MAX_LIBRARY_VERSION_STRING);
	printf("WORLD %s\n", STR(MPI_COMM_WORLD));
	printf("BYTE %s\n", STR(MPI_BYTE));
	printf("INT %s\n", STR(MPI_INT));
	printf("MIN %s\n", STR(MPI_MIN));
	printf("INFO_NULL %s\n", STR(MPI_INFO_NULL));
	printf("ERRORS_RETURN %s\n", STR(MPI_ERRORS_RETURN));
	return 0;
}
`

// runABIProbe compiles abiProbe against the mpi.h in include and returns
// its output as a map from the first word of each line to the rest.
func runABIProbe(t *testing.T, include string) map[string]string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "probe.c")
	require.NoError(t, os.WriteFile(src, []byte(abiProbe), 0o600))
	wd, err := os.Getwd()
	require.NoError(t, err)
	bin := filepath.Join(dir, "probe")
	out, err := exec.Command("gcc", "-std=c11", "-Wall", "-Werror", "-I", include, "-I", wd, "-o", bin, src).CombinedOutput()
	require.NoError(t, err, "compiling against %s/mpi.h:\n%s", include, out)
	out, err = exec.Command(bin).CombinedOutput()
	require.NoError(t, err, "%s", out)
	got := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		k, v, _ := strings.Cut(l, " ")
		got[k] = strings.Join(strings.Fields(v), " ")
	}
	return got
}

func commonABI(t *testing.T, got map[string]string) {
	t.Helper()
	assert.Equal(t, "0 0", got["SUCCESS"])
	assert.Equal(t, "0 1 2 3", got["THREAD"], "ThreadSingle..ThreadMultiple")
	assert.Equal(t, "1 1", got["ERRSTR"], "abi.h's buffers hold the longest texts")
}

// TestOpenMPIHeaderAgrees: abi.h's view of Open MPI matches Open MPI's own
// mpi.h (Debian's libopenmpi-dev, which scripts/deps.sh installs; the
// build itself never reads it): the same constants, and every predefined
// handle the address of the global the loader resolves with dlsym.
func TestOpenMPIHeaderAgrees(t *testing.T) {
	include := "/usr/lib/x86_64-linux-gnu/openmpi/include"
	if _, err := os.Stat(filepath.Join(include, "mpi.h")); err != nil {
		t.Skipf("Open MPI's mpi.h is not at %s (Debian amd64: libopenmpi-dev): abi.h's Open MPI side is checked only against it", include)
	}
	got := runABIProbe(t, include)
	commonABI(t, got)
	assert.Equal(t, "0", got["SHARED"], "GOSHMEMI_OMPI_COMM_TYPE_SHARED")
	for k, sym := range map[string]string{
		"WORLD": "ompi_mpi_comm_world", "BYTE": "ompi_mpi_byte", "INT": "ompi_mpi_int", "MIN": "ompi_mpi_op_min",
		"INFO_NULL": "ompi_mpi_info_null", "ERRORS_RETURN": "ompi_mpi_errors_return",
	} {
		assert.Contains(t, got[k], "&("+sym+")", "MPI_%s", k)
	}
}

// TestMPICHHeaderAgrees: abi.h's MPICH values match MPICH's mpi.h where it
// is installed (Debian's libmpich-dev; scripts/deps.sh does not install it,
// since it would take over the mpi.h alternative). Without it, the values
// are still exercised against the library by the singleton and launcher
// tests (a wrong handle is an MPI error there).
func TestMPICHHeaderAgrees(t *testing.T) {
	include := "/usr/include/x86_64-linux-gnu/mpich"
	if _, err := os.Stat(filepath.Join(include, "mpi.h")); err != nil {
		t.Skipf("MPICH's mpi.h is not at %s (Debian amd64: libmpich-dev, not installed by scripts/deps.sh)", include)
	}
	got := runABIProbe(t, include)
	commonABI(t, got)
	assert.Equal(t, "1", got["SHARED"], "GOSHMEMI_MPICH_COMM_TYPE_SHARED")
	for k, v := range map[string]string{
		"WORLD": "0x44000000", "BYTE": "0x4c00010d", "INT": "0x4c000405", "MIN": "0x58000002",
		"INFO_NULL": "0x1c000000", "ERRORS_RETURN": "0x54000001",
	} {
		assert.Contains(t, got[k], v, "MPI_%s", k)
	}
}
