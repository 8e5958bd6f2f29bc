package testutil

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
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
//
// After ShareFakeCUDA (a TestMain's), the libraries are built once, into
// a temporary directory made then, and every later call returns the same
// path (or skips or fails as the first did): the C++ build takes seconds,
// and the library is only read.
func FakeCUDA(t testing.TB) string {
	t.Helper()
	fakeShared.mu.Lock()
	if !fakeShared.on {
		fakeShared.mu.Unlock()
		lib, skip, err := buildFakeCUDA(t.TempDir())
		return fakeResult(t, lib, skip, err)
	}
	defer fakeShared.mu.Unlock()
	if !fakeShared.built {
		fakeShared.built = true
		fakeShared.dir, fakeShared.err = os.MkdirTemp("", "goshmem-fakecuda-")
		if fakeShared.err == nil {
			fakeShared.lib, fakeShared.skip, fakeShared.err = buildFakeCUDA(fakeShared.dir)
		}
	}
	return fakeResult(t, fakeShared.lib, fakeShared.skip, fakeShared.err)
}

// fakeShared is ShareFakeCUDA's state: whether it is on, and the one
// build's directory and outcome.
var fakeShared struct {
	mu    sync.Mutex
	on    bool
	built bool
	dir   string
	lib   string
	skip  string
	err   error
}

// ShareFakeCUDA makes FakeCUDA build once for the whole test binary, into
// a temporary directory made on first use (a child process that never
// builds makes none). The caller (TestMain) calls the returned function
// after m.Run: it removes that directory.
func ShareFakeCUDA() (remove func()) {
	fakeShared.mu.Lock()
	defer fakeShared.mu.Unlock()
	fakeShared.on = true
	return func() {
		fakeShared.mu.Lock()
		defer fakeShared.mu.Unlock()
		if fakeShared.dir != "" {
			_ = os.RemoveAll(fakeShared.dir)
		}
	}
}

func fakeResult(t testing.TB, lib, skip string, err error) string {
	t.Helper()
	if skip != "" {
		t.Skip(skip)
	}
	require.NoError(t, err)
	return lib
}

// buildFakeCUDA builds the two libraries into dir: the fake's path, or why
// the test must skip, or the build's failure (with the compiler's output).
func buildFakeCUDA(dir string) (lib, skip string, err error) {
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		return "", fmt.Sprintf("no C compiler %q to build the fake libcuda: %v", cc, err), nil
	}
	_, self, _, _ := runtime.Caller(0)
	cdir := filepath.Join(filepath.Dir(self), "..", "cgo", "cuda")
	lib = filepath.Join(dir, "libfakecuda.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-pthread", "-O1", "-Wall", "-Werror", "-I", cdir,
		"-o", lib, filepath.Join(cdir, "testdata", "fakecuda.c"), "-ldl").CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("building the fake libcuda: %w: %s", err, out)
	}
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		return "", fmt.Sprintf("no C++ compiler %q to build the kernel library for the fake libcuda: %v", cxx, err), nil
	}
	root := filepath.Join(filepath.Dir(self), "..", "..")
	src := filepath.Join(root, "gpulib", "lib.cu")
	if _, err := os.Stat(src); err != nil {
		return "", fmt.Sprintf("no kernel library source to build for the fake libcuda: %v", err), nil
	}
	out, err = exec.Command(cxx, "-std=c++17", "-x", "c++", "-shared", "-fPIC", "-pthread", "-O1", "-Wall", "-Wextra", "-Werror",
		"-I", filepath.Join(root, "include"), "-I", filepath.Join(root, "internal", "gpulib"),
		"-o", filepath.Join(dir, "libfakecuda_kernels.so"), src).CombinedOutput()
	if err != nil {
		return "", "", fmt.Errorf("building the kernel library for the fake libcuda: %w: %s", err, out)
	}
	return lib, "", nil
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
