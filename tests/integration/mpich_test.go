package integration

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// MPI is loaded at run time: the spmd binary built once runs under Open
// MPI's mpirun (the rest of the suite) and under MPICH's mpiexec (here),
// and starts without touching any MPI when no launcher started it.

// TestSPMDMPICH runs every check under MPICH's mpiexec (Hydra).
func TestSPMDMPICH(t *testing.T) {
	mpiexec := testutil.MPICHExec(t)
	require.NoError(t, buildErr)
	for _, np := range []int{2, 4} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			suiteOf(t, launch{np: np, mpiexec: mpiexec})
		})
	}
}

// TestFaultMPICH: PE 1 exits without Finalize while the others wait for it
// in a barrier, under MPICH: the job ends by itself, non-zero.
func TestFaultMPICH(t *testing.T) {
	mpiexec := testutil.MPICHExec(t)
	require.NoError(t, buildErr)
	for _, np := range []int{2, 4} {
		t.Run(fmt.Sprintf("np%d", np), func(t *testing.T) {
			r := launch{np: np, mpiexec: mpiexec, args: []string{"-mode", "fault-exit", "-fault-wait", "barrier"}}.run(t, 60*time.Second)
			t.Logf("exit %d after %v; output:\n%s", r.code, r.wall.Round(time.Millisecond), r.out)
			assert.NotEqual(t, 0, r.code, "mpiexec exit status")
			assert.Contains(t, r.out, "spmd: PE 1: injecting fault-exit")
		})
	}
}

// TestNoMPILinked: the goshmem binary does not link any MPI library (its
// ELF NEEDED entries, what readelf -d lists) nor import an MPI symbol.
func TestNoMPILinked(t *testing.T) {
	require.NoError(t, buildErr)
	f, err := elf.Open(spmdBin)
	require.NoError(t, err)
	defer f.Close()
	libs, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.NotEmpty(t, libs, "a cgo binary needs libc at least")
	for _, l := range libs {
		assert.NotRegexp(t, `^lib(mpi|mpich|open-pal|open-rte|pmix)\b`, l, "NEEDED %s", l)
	}
	syms, err := f.ImportedSymbols()
	require.NoError(t, err)
	for _, s := range syms {
		assert.False(t, strings.HasPrefix(s.Name, "MPI_") || strings.HasPrefix(s.Name, "ompi_"), "imports %s from %s", s.Name, s.Library)
	}
	t.Logf("NEEDED: %v", libs)
}

// noLauncherEnv is this process's environment without any MPI launcher's
// variables, so that the spmd program really runs alone.
func noLauncherEnv(extra ...string) []string {
	launcher := regexp.MustCompile(`^(OMPI_|PMIX_|PMI_|HYDI_|MPI_LOCAL|GOSHMEM_)`)
	var env []string
	for _, kv := range os.Environ() {
		if !launcher.MatchString(kv) {
			env = append(env, kv)
		}
	}
	return append(env, extra...)
}

// runAlone starts spmd without a launcher, in env, and returns its combined
// output and exit status.
func runAlone(t *testing.T, env []string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.Command(spmdBin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		require.True(t, ok, "starting spmd: %v", err)
		return string(out), ee.ExitCode()
	}
	return string(out), 0
}

// trapLibrary builds a shared library that ends the process (exit 97, with
// a message) as soon as anything loads it: pointed to by GOSHMEM_LIBMPI it
// shows whether goshmem tried to load MPI.
func trapLibrary(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "trap.c")
	require.NoError(t, os.WriteFile(src, []byte(`#include <stdio.h>
#include <stdlib.h>
__attribute__((constructor)) static void trap(void)
{
	fprintf(stderr, "trap: an MPI library was loaded\n");
	exit(97);
}
`), 0o600))
	lib := filepath.Join(dir, "libtrapmpi.so")
	out, err := exec.Command("gcc", "-shared", "-fPIC", "-o", lib, src).CombinedOutput()
	require.NoError(t, err, "gcc (scripts/deps.sh installs it): %s", out)
	return lib
}

// TestNoMPIAlone: started alone, a goshmem program is a 1-PE job that never
// loads an MPI library: not the one GOSHMEM_LIBMPI names (a library that
// would end the process when loaded), not one of the default search (the
// dynamic loader's LD_DEBUG=files trace names no libmpi), and a
// GOSHMEM_LIBMPI that names nothing does not matter. That is how it runs
// on a machine without MPI.
func TestNoMPIAlone(t *testing.T) {
	require.NoError(t, buildErr)
	t.Run("trap-library", func(t *testing.T) {
		out, code := runAlone(t, noLauncherEnv("GOSHMEM_LIBMPI="+trapLibrary(t)), "-mode", "initfin", "-heap", "0")
		require.Equal(t, 0, code, out)
		assert.NotContains(t, out, "trap:")
		assert.Contains(t, out, "initfin: np 1:")
	})
	t.Run("nonexistent-library", func(t *testing.T) {
		suiteOf(t, launch{env: []string{"GOSHMEM_LIBMPI=/nonexistent/libmpi.so"}})
	})
	t.Run("loader-trace", func(t *testing.T) {
		out, code := runAlone(t, noLauncherEnv("LD_DEBUG=files"), "-mode", "initfin", "-heap", "0")
		require.Equal(t, 0, code, out)
		require.Contains(t, out, "file=", "LD_DEBUG=files printed no trace")
		assert.NotRegexp(t, `file=lib(mpi|mpich)\.so`, out)
		assert.Contains(t, out, "initfin: np 1:")
	})
}

// TestMPIMissing: GOSHMEM_BOOTSTRAP=mpi with GOSHMEM_LIBMPI naming no
// library fails Init with ErrNotSupported, naming the library, dlerror's
// text and the variable to set.
func TestMPIMissing(t *testing.T) {
	require.NoError(t, buildErr)
	out, code := runAlone(t, noLauncherEnv("GOSHMEM_BOOTSTRAP=mpi", "GOSHMEM_LIBMPI=/nonexistent/libmpi.so"), "-mode", "init-report")
	assert.Equal(t, 1, code, out)
	assert.Regexp(t, `init-report: PE 0: Init failed \(ErrNotSupported\): .*mpi: Load: /nonexistent/libmpi.so `+
		`\(dlopen: /nonexistent/libmpi.so: cannot open shared object file: No such file or directory\)`, out)
	assert.Regexp(t, `init-report: PE 0: hint: .*GOSHMEM_LIBMPI`, out)
}
