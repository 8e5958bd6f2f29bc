package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/gpulib"
)

// FakeCUDA compiles the fake CUDA driver (internal/cgo/cuda/testdata/
// fakecuda.c, "device memory" in host memory) into a shared library in a
// temporary directory and returns its path, for GOSHMEM_LIBCUDA. The fake's
// own environment (FAKECUDA_DEVICES, FAKECUDA_INIT, FAKECUDA_LEAKS) is
// described at the top of the C file. Next to it, libfakecuda_kernels.so
// is goshmem's kernel library (gpulib/lib.cu) built for the host by $CXX
// (g++ by default), which the fake runs for any fatbin image (FakeLib).
// It skips when there is no C compiler $CC (gcc by default; cgo needs one
// anyway), no C++ compiler $CXX, or no gpulib/lib.cu (a copy of the
// module without the repository's nested modules).
func FakeCUDA(t testing.TB) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler %q to build the fake libcuda: %v", cc, err)
	}
	_, self, _, _ := runtime.Caller(0)
	dir := filepath.Join(filepath.Dir(self), "..", "cgo", "cuda")
	lib := filepath.Join(t.TempDir(), "libfakecuda.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-pthread", "-O1", "-Wall", "-Werror", "-I", dir,
		"-o", lib, filepath.Join(dir, "testdata", "fakecuda.c"), "-ldl").CombinedOutput()
	require.NoError(t, err, "building the fake libcuda: %s", out)
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		t.Skipf("no C++ compiler %q to build the kernel library for the fake libcuda: %v", cxx, err)
	}
	root := filepath.Join(filepath.Dir(self), "..", "..")
	src := filepath.Join(root, "gpulib", "lib.cu")
	if _, err := os.Stat(src); err != nil {
		t.Skipf("no kernel library source to build for the fake libcuda: %v", err)
	}
	out, err = exec.Command(cxx, "-std=c++17", "-x", "c++", "-shared", "-fPIC", "-pthread", "-O1", "-Wall", "-Wextra", "-Werror",
		"-I", filepath.Join(root, "include"), "-I", filepath.Join(root, "internal", "gpulib"),
		"-o", filepath.Join(filepath.Dir(lib), "libfakecuda_kernels.so"), src).CombinedOutput()
	require.NoError(t, err, "building the kernel library for the fake libcuda: %s", out)
	return lib
}

// FakeLibImage is a kernel library image for the fake driver: the fatbin
// magic alone (0xBA55ED50, little-endian), on which the fake loads
// libfakecuda_kernels.so instead of reading the image.
var FakeLibImage = []byte{0x50, 0xed, 0x55, 0xba, 0, 0, 0, 0}

// FakeLib registers FakeLibImage as this process's kernel library, as a
// program's import of github.com/goshmem/goshmem/gpulib registers the
// real one, until t ends.
func FakeLib(t testing.TB) {
	t.Helper()
	gpulib.Register(gpulib.ABI, FakeLibImage)
	t.Cleanup(gpulib.Unregister)
}

// FakeCUDALive reads the live-object counts the fake keeps under
// FAKECUDA_LEAKS=prefix for process pid ("device_allocs", "streams" ...).
// ok is false when that process never created or released an object.
func FakeCUDALive(t testing.TB, prefix string, pid int) (live map[string]int64, ok bool) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("%s.%d", prefix, pid))
	if os.IsNotExist(err) {
		return nil, false
	}
	require.NoError(t, err)
	live = map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		require.Len(t, f, 2, "line %q of the fake's live counts", line)
		n, err := strconv.ParseInt(f[1], 10, 64)
		require.NoError(t, err)
		live[f[0]] = n
	}
	return live, true
}
