package fabric

import (
	"fmt"
	"testing"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

// TestLoadMissingLibrary: a library dlopen cannot find gives an error that
// names it, what asked for it and dlopen's reason, with a hint, and
// matches ErrNoLibrary, ErrNoProvider and errs.ErrNotSupported. The failed
// attempt leaves the loaded library usable.
func TestLoadMissingLibrary(t *testing.T) {
	const bogus = "libgoshmem-no-such-fabric.so.1"
	f := dlopen(bogus)
	require.NotNil(t, f, "dlopen(%q) must fail", bogus)
	assert.Equal(t, loadDlopen, f.code)
	err := f.error(forOFI)
	msg := err.Error()
	assert.Contains(t, msg, `dlopen("`+bogus+`")`)
	assert.Contains(t, msg, "cannot open shared object file", "dlerror's text")
	assert.Contains(t, msg, "the ofi transport (GOSHMEM_TRANSPORT=ofi")
	assert.Contains(t, errors.FlattenHints(err), "libfabric1")
	assert.Contains(t, errors.FlattenHints(err), "LD_LIBRARY_PATH")
	assert.True(t, errors.Is(err, ErrNoLibrary))
	assert.True(t, errors.Is(err, ErrNoProvider), "the ofi transport reports it as no provider")
	assert.True(t, errors.Is(err, errs.ErrNotSupported))

	require.NoError(t, Load(""), "libfabric1 is installed here (TestOpen needs it too)")
	e, err := Open("tcp;ofi_rxm")
	require.NoError(t, err, "a failed dlopen of another name leaves the loaded table alone")
	e.Close()
}

// TestLoadFailureWording: each way loading fails names what was found.
func TestLoadFailureWording(t *testing.T) {
	for _, tc := range []struct {
		f    loadFailure
		who  string
		want string
	}{
		{loadFailure{Library, loadVersion, "1.11"}, forCXI,
			`fabric: the CXI triggered path's fabric engine (shmem.WithCXI, GOSHMEM_CXI_ENGINE=auto or fabric) needs libfabric.so.1 1.14 or later: dlopen("libfabric.so.1") found version 1.11`},
		{loadFailure{Library, loadSymbol, "fi_getinfo@FABRIC_1.3: undefined symbol"}, forOFI,
			`fabric: the ofi transport (GOSHMEM_TRANSPORT=ofi, or auto with PEs on several nodes) needs libfabric.so.1: dlopen("libfabric.so.1") loaded a library without fi_getinfo@FABRIC_1.3: undefined symbol`},
		{loadFailure{Library, loadDlopen, "libfabric.so.1: cannot open shared object file: No such file or directory"}, "",
			`fabric: goshmem's libfabric binding needs libfabric.so.1: dlopen("libfabric.so.1"): libfabric.so.1: cannot open shared object file: No such file or directory`},
	} {
		err := tc.f.error(tc.who)
		assert.Equal(t, tc.want, err.Error())
		assert.True(t, errors.Is(err, ErrNoLibrary))
	}
}

// TestLoadedVersion: the loaded library is at least MinVersion.
func TestLoadedVersion(t *testing.T) {
	require.NoError(t, Load(forOFI))
	v := LoadedVersion()
	require.NotEmpty(t, v)
	var major, minor int
	_, err := fmt.Sscanf(v, "%d.%d", &major, &minor)
	require.NoError(t, err)
	assert.True(t, major > 1 || (major == 1 && minor >= 14), "version %s >= %s", v, MinVersion)
}
