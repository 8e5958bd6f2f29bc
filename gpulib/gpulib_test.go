package gpulib

import (
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	lib "github.com/goshmem/goshmem/internal/gpulib"
)

// root is the repository root (this module's parent).
const root = ".."

// compatHeader names the device headers that are not lib.fatbin's inputs:
// the NVSHMEM compat layer, for ported programs (lib.cu includes neither).
var compatHeader = map[string]bool{"nvshmem_compat.h": true, "nvshmem_host.h": true}

// inputHash is stamp.sh's hash of lib.fatbin's inputs.
func inputHash(t *testing.T) string {
	t.Helper()
	paths := []string{"gpulib/lib.cu", "internal/gpulib/lib.h", "include/goshmem.h"}
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "include", "goshmem"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".h") && !compatHeader[d.Name()] {
			rel, _ := filepath.Rel(root, p)
			paths = append(paths, filepath.ToSlash(rel))
		}
		return err
	}))
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(filepath.Join(root, p))
		require.NoError(t, err)
		h.Write([]byte(p + "\n"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// The committed fatbin was built from the committed sources: its stamp is
// the hash of lib.cu, lib.h and the device headers. nvcc's output is not
// byte-for-byte reproducible, so the stamp, not the fatbin, is compared.
func TestFatbinFresh(t *testing.T) {
	assert.Equal(t, inputHash(t), strings.TrimSpace(stamp),
		"lib.fatbin is stale (its sources changed since it was built): run `make gpulib` on a machine with nvcc and commit lib.fatbin and lib.fatbin.sha256")
	require.GreaterOrEqual(t, len(fatbin), 4)
	assert.Equal(t, []byte{0x50, 0xed, 0x55, 0xba}, fatbin[:4], "lib.fatbin does not start with the fatbin magic")
}

// The import registered the image, for the ABI of lib.h and of goshmem.
func TestRegistered(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(root, "internal", "gpulib", "lib.h"))
	require.NoError(t, err)
	m := regexp.MustCompile(`(?m)^#define GOSHMEMI_LIB_ABI (\d+)$`).FindSubmatch(b)
	require.NotNil(t, m, "lib.h defines no GOSHMEMI_LIB_ABI")
	v, err := strconv.Atoi(string(m[1]))
	require.NoError(t, err)
	assert.Equal(t, v, abi, "lib.h's GOSHMEMI_LIB_ABI changed: rebuild lib.fatbin (make gpulib) and raise abi")
	assert.Equal(t, lib.ABI, abi)
	img, err := lib.Image()
	require.NoError(t, err)
	assert.Equal(t, fatbin, img)
}

// Every kernel goshmem launches by name is in lib.cu: a fixed kernel as
// LIBK(name), a reduction through its macro.
func TestNames(t *testing.T) {
	b, err := os.ReadFile("lib.cu")
	require.NoError(t, err)
	src := string(b)
	for k := lib.Kernel(0); int(k) < lib.Count; k++ {
		name := k.Name()
		macro, ty := "", ""
		switch {
		case strings.HasPrefix(name, "goshmemi_lib_reduce_part_"):
			macro, ty = "GOSHMEMI_LIB_PART_", strings.TrimPrefix(name, "goshmemi_lib_reduce_part_")
		case strings.HasPrefix(name, "goshmemi_lib_reduce_"):
			macro, ty = "GOSHMEMI_LIB_REDUCE_", strings.TrimPrefix(name, "goshmemi_lib_reduce_")
		default:
			assert.Contains(t, src, "LIBK("+name+")")
			continue
		}
		i := -1
		for j, n := range lib.Types {
			if n == ty {
				i = j
			}
		}
		require.GreaterOrEqual(t, i, 0, "kernel %s: no type %q", name, ty)
		kind := "INT"
		if lib.Type(i).IsFloat() {
			kind = "FLOAT"
		}
		assert.Contains(t, src, macro+kind+"("+ty+", ")
		if macro == "GOSHMEMI_LIB_PART_" {
			assert.Equal(t, lib.ReducePart(lib.Type(i)), k)
		} else {
			assert.Equal(t, lib.Reduce(lib.Type(i)), k)
		}
	}
}
