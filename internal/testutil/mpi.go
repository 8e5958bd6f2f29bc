package testutil

import (
	"os"
	"os/exec"
	"testing"
)

// RequireMPICHEnv names the variable that makes a missing MPICH a test
// failure instead of a skip. `make test` and .ci/run set it (scripts/deps.sh
// installs MPICH); so does any CI that sets CI.
const RequireMPICHEnv = "GOSHMEM_REQUIRE_MPICH"

// MPICHRequired reports whether a missing MPICH fails the tests: under
// GOSHMEM_REQUIRE_MPICH=1 or a CI environment (CI set, as CI services do).
func MPICHRequired() bool {
	return os.Getenv(RequireMPICHEnv) == "1" || os.Getenv("CI") != ""
}

// OpenMPIRun returns Open MPI's launcher: mpirun.openmpi (Debian's name,
// which stays Open MPI's whichever MPI the mpirun alternative points to),
// else a plain mpirun; "" when neither is on PATH.
func OpenMPIRun() string {
	for _, name := range []string{"mpirun.openmpi", "mpirun"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// MPICHExec returns MPICH's Hydra launcher (mpiexec.mpich, else
// mpiexec.hydra). Without one it skips t, saying why, or fails t when
// MPICHRequired.
func MPICHExec(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"mpiexec.mpich", "mpiexec.hydra"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	const why = "mpiexec.mpich (MPICH's launcher) is not on PATH: scripts/deps.sh installs it (Debian package mpich)"
	if MPICHRequired() {
		t.Fatalf("%s, and %s=1 or CI is set, so the MPICH tests must run", why, RequireMPICHEnv)
	}
	t.Skip(why)
	return ""
}

// MPICHLibrary returns the soname of Debian's MPICH library when it can be
// loaded (the package mpich ships libmpich.so.12, not libmpi.so.12), with the
// same skip-or-fail rule as MPICHExec.
func MPICHLibrary(t testing.TB) string {
	t.Helper()
	for _, dir := range []string{"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib"} {
		for _, name := range []string{"libmpich.so.12", "libmpi.so.12"} {
			if _, err := os.Stat(dir + "/" + name); err == nil {
				return name
			}
		}
	}
	const why = "no MPICH library (libmpich.so.12 or libmpi.so.12) in the system library directories: scripts/deps.sh installs it (Debian package mpich)"
	if MPICHRequired() {
		t.Fatalf("%s, and %s=1 or CI is set, so the MPICH tests must run", why, RequireMPICHEnv)
	}
	t.Skip(why)
	return ""
}
