package mpi

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// singletonEnv, when set, makes TestSingleton the child that loads that
// library and runs the binding as a 1-process job (MPI can be loaded and
// initialized once per process, so each library gets a process of its own).
const singletonEnv = "CGOMPI_TEST_SINGLETON_LIB"

func TestNumberByFirstAppearance(t *testing.T) {
	tests := []struct {
		name string
		keys []int
		want []int
	}{
		{"empty", []int{}, []int{}},
		{"one", []int{5}, []int{0}},
		{"one node", []int{0, 0, 0, 0}, []int{0, 0, 0, 0}},
		{"blocked", []int{0, 0, 2, 2}, []int{0, 0, 1, 1}},
		{"round robin", []int{0, 1, 0, 1}, []int{0, 1, 0, 1}},
		{"unsorted keys", []int{7, 7, 3, 7, 3, 9}, []int{0, 0, 1, 0, 1, 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, NumberByFirstAppearance(tt.keys))
		})
	}
}

func TestThreadLevelName(t *testing.T) {
	assert.Less(t, ThreadSingle, ThreadFunneled)
	assert.Less(t, ThreadFunneled, ThreadSerialized)
	assert.Less(t, ThreadSerialized, ThreadMultiple)
	assert.Equal(t, "MPI_THREAD_SINGLE", ThreadLevelName(ThreadSingle))
	assert.Equal(t, "MPI_THREAD_FUNNELED", ThreadLevelName(ThreadFunneled))
	assert.Equal(t, "MPI_THREAD_SERIALIZED", ThreadLevelName(ThreadSerialized))
	assert.Equal(t, "MPI_THREAD_MULTIPLE", ThreadLevelName(ThreadMultiple))
	assert.Equal(t, "MPI_THREAD_42", ThreadLevelName(42))
}

// clearLauncherEnv unsets every launcher variable for the test.
func clearLauncherEnv(t *testing.T) {
	for _, k := range append(append([]string(nil), ompiLauncherEnv...), mpichLauncherEnv...) {
		t.Setenv(k, "")
		require.NoError(t, os.Unsetenv(k))
	}
}

func TestCandidates(t *testing.T) {
	clearLauncherEnv(t)
	ompiFirst := []string{"libmpi.so.40", "libmpi.so.12", "libmpich.so.12", "libmpi.so", "libmpich.so"}
	mpichFirst := []string{"libmpi.so.12", "libmpich.so.12", "libmpi.so.40", "libmpi.so", "libmpich.so"}
	assert.Equal(t, ompiFirst, DefaultLibraries)
	assert.Equal(t, ompiFirst, Candidates(), "no launcher")
	for _, k := range mpichLauncherEnv {
		t.Run(k, func(t *testing.T) {
			t.Setenv(k, "0")
			assert.Equal(t, mpichFirst, Candidates())
			t.Setenv("OMPI_COMM_WORLD_RANK", "0")
			assert.Equal(t, ompiFirst, Candidates(), "an Open MPI launcher's variable wins")
		})
	}
	assert.Equal(t, ompiFirst, DefaultLibraries, "Candidates changed DefaultLibraries")
}

func TestLoadMissingLibrary(t *testing.T) {
	unload()
	t.Cleanup(unload)
	t.Setenv(LibraryEnv, "/nonexistent/libmpi.so.40")
	err := Load()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoMPI), "%v", err)
	assert.Contains(t, err.Error(), "mpi: Load: /nonexistent/libmpi.so.40 (dlopen: ")
	assert.Contains(t, err.Error(), "No such file or directory", "dlerror's text")
	assert.NotContains(t, err.Error(), "libmpi.so.12", "GOSHMEM_LIBMPI set: nothing else is tried")
	assert.Contains(t, errors.FlattenHints(err), LibraryEnv)
	name, impl, _ := Library()
	assert.Equal(t, NoImpl, impl)
	assert.Empty(t, name)

	// Every call fails with the Load error, never a crash.
	_, err = Rank()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoMPI))
	assert.Contains(t, err.Error(), "mpi: MPI_Comm_rank: MPI not loaded")
	assert.True(t, errors.Is(Barrier(), ErrNoMPI))
	// Retrying fails the same way.
	assert.True(t, errors.Is(Load(), ErrNoMPI))
}

func TestCallBeforeLoad(t *testing.T) {
	unload()
	t.Cleanup(unload)
	_, err := Initialized()
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNotLoaded))
	assert.Equal(t, "mpi: MPI_Initialized: mpi: MPI library not loaded", err.Error())
	assert.True(t, errors.Is(Abort(1), ErrNotLoaded))
	assert.True(t, errors.Is(Allgather([]byte{1}, make([]byte, 1)), ErrNotLoaded))
	assert.Equal(t, "no MPI loaded", Describe())
}

func TestLoadNotMPI(t *testing.T) {
	unload()
	t.Cleanup(unload)
	err := LoadLibrary("libc.so.6") // loads fine, has no MPI_Init_thread
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoMPI))
	assert.Equal(t, "mpi: Load: libc.so.6 is not an MPI library: it lacks MPI_Init_thread", err.Error())
	_, impl, _ := Library()
	assert.Equal(t, NoImpl, impl)
}

// fakeMPI builds testdata/fakempi.c: every MPI function, but neither Open
// MPI nor the MPICH ABI.
func fakeMPI(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	lib := filepath.Join(t.TempDir(), "libfakempi.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-Wall", "-Wextra", "-Werror", "-o", lib, "testdata/fakempi.c").CombinedOutput()
	require.NoError(t, err, "%s (cgo needs a C compiler, so it is there)\n%s", cc, out)
	return lib
}

func TestLoadUnsupportedMPI(t *testing.T) {
	unload()
	t.Cleanup(unload)
	lib := fakeMPI(t)
	err := LoadLibrary(lib)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoMPI))
	assert.Contains(t, err.Error(), lib+` is an MPI goshmem does not speak ("FakeMPI 0.1")`)
	assert.Contains(t, err.Error(), "neither Open MPI")
	_, impl, _ := Library()
	assert.Equal(t, NoImpl, impl)
}

// TestLoadSearch: a search names every library it tried and why each failed.
func TestLoadSearch(t *testing.T) {
	unload()
	t.Cleanup(unload)
	lib := fakeMPI(t)
	err := LoadLibrary("libgoshmem-no-such-mpi.so.1", "libc.so.6", lib)
	require.Error(t, err)
	assert.True(t, errors.Is(err, ErrNoMPI))
	msg := err.Error()
	assert.Contains(t, msg, "mpi: Load: no usable MPI library; tried libgoshmem-no-such-mpi.so.1 (dlopen: ")
	assert.Contains(t, msg, "; libc.so.6 is not an MPI library: it lacks MPI_Init_thread; ")
	assert.Contains(t, msg, lib+" is an MPI goshmem does not speak")
}

// TestSingleton runs the whole binding as a 1-process MPI job with each
// installed MPI, in a child process per library (this test binary run
// again): not under a launcher, MPI_Init_thread makes a singleton.
// Multi-rank behaviour is covered by bootstrap/mpi's launcher tests.
func TestSingleton(t *testing.T) {
	if lib := os.Getenv(singletonEnv); lib != "" {
		singleton(t, lib)
		return
	}
	for _, tc := range []struct {
		name string
		lib  func(t *testing.T) string
		impl Impl
	}{
		{"openmpi", func(t *testing.T) string {
			if testutil.OpenMPIRun() == "" {
				t.Skip("Open MPI is not installed (Debian: openmpi-bin)")
			}
			return "libmpi.so.40"
		}, OpenMPI},
		{"mpich", func(t *testing.T) string { return testutil.MPICHLibrary(t) }, MPICH},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lib := tc.lib(t)
			cmd := exec.Command(os.Args[0], "-test.run=^TestSingleton$", "-test.v")
			cmd.Env = append(os.Environ(), singletonEnv+"="+lib, LibraryEnv+"="+lib)
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "child loading %s:\n%s", lib, out)
			assert.Contains(t, string(out), "singleton: "+tc.impl.String()+" ("+lib+": ")
			t.Logf("%s", out)
		})
	}
}

// singleton is the child of TestSingleton: Load (GOSHMEM_LIBMPI is lib),
// then every call on one locked OS thread, as MPI_THREAD_FUNNELED requires.
func singleton(t *testing.T, lib string) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	clearLauncherEnv(t)

	require.NoError(t, Load())
	require.NoError(t, Load(), "Load is idempotent")
	require.NoError(t, LoadLibrary(lib))
	err := LoadLibrary("libgoshmem-other.so")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "already loaded from \""+lib+"\"")
	name, impl, ver := Library()
	assert.Equal(t, lib, name)
	assert.NotEqual(t, NoImpl, impl)
	assert.NotEmpty(t, ver)
	t.Logf("singleton: %s", Describe())

	ok, err := Initialized()
	require.NoError(t, err)
	require.False(t, ok, "MPI already initialized in this test binary")

	provided, err := InitThread(ThreadFunneled)
	require.NoError(t, err)
	assert.GreaterOrEqual(t, provided, ThreadFunneled, "provided %s", ThreadLevelName(provided))

	ok, err = Initialized()
	require.NoError(t, err)
	assert.True(t, ok)

	rank, err := Rank()
	require.NoError(t, err)
	assert.Equal(t, 0, rank)
	size, err := Size()
	require.NoError(t, err)
	assert.Equal(t, 1, size)

	require.NoError(t, Barrier())

	out := make([]byte, 3)
	require.NoError(t, Allgather([]byte("abc"), out))
	assert.Equal(t, []byte("abc"), out)
	require.NoError(t, Allgather(nil, nil))

	err = Allgather([]byte("abc"), make([]byte, 2))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "mpi: MPI_Allgather: out holds 2 bytes, want 3")

	buf := []byte{1, 2, 3}
	require.NoError(t, Bcast(buf, 0))
	assert.Equal(t, []byte{1, 2, 3}, buf)

	// A bad root is an MPI error returned (MPI_ERRORS_RETURN), with MPI's
	// text: the error handler really was set through this ABI's handles.
	err = Bcast(buf, 5)
	require.Error(t, err)
	assert.Regexp(t, `^mpi: MPI_Bcast: .*\(error code \d+\)$`, strings.ReplaceAll(err.Error(), "\n", " "))

	nodes, err := NodeIDs()
	require.NoError(t, err)
	assert.Equal(t, []int{0}, nodes)

	require.NoError(t, Finalize())
	fin, err := Finalized()
	require.NoError(t, err)
	assert.True(t, fin)
}

// TestBuildNeedsNoMPI: no Go package of the module asks the C toolchain
// for MPI (mpi.h, -lmpi, an MPI pkg-config package), so `go build` of a
// goshmem program works on a machine without MPI; the MPI types this
// package needs are declared in abi.h.
func TestBuildNeedsNoMPI(t *testing.T) {
	forbidden := regexp.MustCompile(`#\s*include\s*[<"]mpi\.h[>"]|-lmpi\b|-lmpich\b|pkg-config:.*\b(ompi|mpich|mpi)(-c)?\b`)
	root := filepath.Join("..", "..", "..")
	goDirs := map[string]bool{}
	var files []string
	require.NoError(t, filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if !d.IsDir() {
			switch filepath.Ext(p) {
			case ".go":
				goDirs[filepath.Dir(p)] = true
				if !strings.HasSuffix(p, "_test.go") {
					files = append(files, p)
				}
			case ".c", ".h":
				files = append(files, p)
			}
		}
		return nil
	}))
	checked := 0
	for _, p := range files {
		if filepath.Ext(p) != ".go" && !goDirs[filepath.Dir(p)] {
			continue // C outside a Go package (tests/hdr, benchmark peers) is not part of go build
		}
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		if m := forbidden.Find(b); m != nil {
			t.Errorf("%s asks the build for MPI: %q", p, m)
		}
		checked++
	}
	assert.Greater(t, checked, 100, "walked too few files: is the repository root %s?", root)
}
