package mpiboot

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// The same probe binary as the Open MPI tests, under MPICH's mpiexec
// (Hydra): the loader picks MPICH's library from Hydra's environment.

func TestMPIExec(t *testing.T) {
	for _, np := range []int{1, 2, 4} {
		t.Run(fmt.Sprintf("np=%d", np), func(t *testing.T) {
			assertInfo(t, np, mpiexec(t, 20*time.Second, np, "info"))
		})
	}
}

func TestMPIExecMismatch(t *testing.T) {
	const np = 3
	assertMismatch(t, np, mpiexec(t, 20*time.Second, np, "mismatch"))
}

// TestMPIExecAbort: rank 2 calls Abort(3, "boom"); Hydra ends the job with
// the abort code and MPICH names the rank. The ranks' standard error goes
// to files (PROBE_STDERR_DIR): Hydra sometimes exits at the abort before it
// has forwarded what the ranks wrote (seen once in a fresh-clone make test:
// only PE 3's line came through, with exit code 3).
func TestMPIExecAbort(t *testing.T) {
	dir := t.TempDir()
	res := mpiexec(t, 15*time.Second, 4, "abort", "PROBE_STDERR_DIR="+dir)
	res.out += stderrFiles(t, dir)
	assert.Equal(t, 3, res.code, res.out)
	assert.Contains(t, res.out, "goshmem: PE 2: boom\n")
	assert.Contains(t, res.out, "application called MPI_Abort(MPI_COMM_WORLD, 3) - process 2")
	assert.NotContains(t, res.out, "PE 0: done")
}

// TestMPIExecFault: rank 2 panics while the others wait in a barrier; Hydra
// ends the whole job by itself, non-zero. (Hydra's own "BAD TERMINATION"
// banner is not asserted: whether it prints depends on which exit Hydra
// notices first.)
func TestMPIExecFault(t *testing.T) {
	res := mpiexec(t, 15*time.Second, 4, "panic")
	assert.NotEqual(t, 0, res.code, res.out)
	assert.Contains(t, res.out, "panic: probe: PE 2 panics on purpose", res.out)
	assert.NotContains(t, res.out, "PE 0: done")
}

// TestLibraryNotFound: GOSHMEM_LIBMPI naming no library is, under a
// launcher, an error on every PE that names the PE, the library and
// dlerror's text. (The launcher ends the job at the first PE's exit, so
// the others may not get to print theirs.)
func TestLibraryNotFound(t *testing.T) {
	res := mpirun(t, 20*time.Second, 2, "info", "GOSHMEM_LIBMPI=/nonexistent/libmpi.so")
	assert.NotEqual(t, 0, res.code, res.out)
	assert.Regexp(t, `probe: bootstrap/mpi: PE [01]: New: mpi: Load: /nonexistent/libmpi.so `+
		`\(dlopen: /nonexistent/libmpi.so: cannot open shared object file: No such file or directory\)`, res.out)
}

// TestLibraryAlone: started alone the probe never loads MPI, so a
// GOSHMEM_LIBMPI that names nothing does not matter (a machine without MPI).
func TestLibraryAlone(t *testing.T) {
	res := run(t, 20*time.Second, []string{"GOSHMEM_LIBMPI=/nonexistent/libmpi.so"}, probe(t), "info")
	require.Equal(t, 0, res.code, res.out)
	assert.Equal(t, "launcher=false name=local size=1 node=[0]", linesOf(res.out, 0)[0], res.out)
}

// TestLibraryOfAnotherLauncher: MPICH's library under Open MPI's mpirun (and
// Open MPI's under Hydra) makes each process a singleton; New says so on
// every PE instead of running np jobs of one (the launcher ends the job at
// the first PE's exit: at least one gets to print it).
func TestLibraryOfAnotherLauncher(t *testing.T) {
	t.Run("mpich-under-mpirun", func(t *testing.T) {
		lib := testutil.MPICHLibrary(t)
		res := mpirun(t, 30*time.Second, 2, "info", "GOSHMEM_LIBMPI="+lib)
		assert.NotEqual(t, 0, res.code, res.out)
		assert.Regexp(t, `probe: bootstrap/mpi: PE [01]: New: the launcher started 2 processes, but MPICH \(`+
			regexp.QuoteMeta(lib)+`: MPICH Version:.*\) sees a job of 1`, res.out)
	})
	t.Run("openmpi-under-mpiexec", func(t *testing.T) {
		if testutil.OpenMPIRun() == "" {
			t.Skip("Open MPI is not installed (Debian: openmpi-bin)")
		}
		res := mpiexec(t, 30*time.Second, 2, "info", "GOSHMEM_LIBMPI=libmpi.so.40")
		assert.NotEqual(t, 0, res.code, res.out)
		assert.Regexp(t, `probe: bootstrap/mpi: PE [01]: New: the launcher started 2 processes, but Open MPI \(libmpi.so.40: Open MPI v.*\) sees a job of 1`, res.out)
	})
}
