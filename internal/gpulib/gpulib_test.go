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
)

// inputHash is stamp.sh's hash of lib.fatbin's inputs, from the
// repository root.
func inputHash(t *testing.T, root string) string {
	t.Helper()
	paths := []string{"internal/gpulib/lib.cu", "internal/gpulib/lib.h", "include/goshmem.h"}
	require.NoError(t, filepath.WalkDir(filepath.Join(root, "include", "goshmem"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".h") {
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
	got := inputHash(t, filepath.Join("..", ".."))
	assert.Equal(t, got, strings.TrimSpace(Stamp),
		"lib.fatbin is stale (its sources changed since it was built): run `make gpulib` on a machine with nvcc and commit lib.fatbin and lib.fatbin.sha256")
	require.GreaterOrEqual(t, len(Fatbin), 4)
	assert.Equal(t, []byte{0x50, 0xed, 0x55, 0xba}, Fatbin[:4], "lib.fatbin does not start with the fatbin magic")
}

// The Go mirror of lib.h's values.
func TestABI(t *testing.T) {
	b, err := os.ReadFile("lib.h")
	require.NoError(t, err)
	defs := map[string]int{}
	for _, m := range regexp.MustCompile(`(?m)^#define (GOSHMEMI_LIB_\w+) (\d+)$`).FindAllStringSubmatch(string(b), -1) {
		v, err := strconv.Atoi(m[2])
		require.NoError(t, err)
		defs[m[1]] = v
	}
	want := map[string]int{"GOSHMEMI_LIB_THREADS": Threads, "GOSHMEMI_LIB_NARGS": NArgs,
		"GOSHMEMI_LIB_CMP_EQ": CmpEQ, "GOSHMEMI_LIB_CMP_NE": CmpNE, "GOSHMEMI_LIB_CMP_GT": CmpGT,
		"GOSHMEMI_LIB_CMP_GE": CmpGE, "GOSHMEMI_LIB_CMP_LT": CmpLT, "GOSHMEMI_LIB_CMP_LE": CmpLE,
		"GOSHMEMI_LIB_SIGNAL_SET": SignalSet, "GOSHMEMI_LIB_SIGNAL_ADD": SignalAdd,
		"GOSHMEMI_LIB_MOVE_BROADCAST": MoveBroadcast, "GOSHMEMI_LIB_MOVE_FCOLLECT": MoveFCollect, "GOSHMEMI_LIB_MOVE_ALLTOALL": MoveAllToAll,
		"GOSHMEMI_LIB_ARG_FUSED": ArgFused}
	for i, op := range OpNames {
		want["GOSHMEMI_LIB_OP_"+strings.ToUpper(op)] = i
	}
	assert.Equal(t, want, defs)
}

// Every kernel name appears in lib.cu as a kernel (fixed) or through its
// macro (reductions).
func TestNames(t *testing.T) {
	b, err := os.ReadFile("lib.cu")
	require.NoError(t, err)
	src := string(b)
	for k := Kernel(0); int(k) < Count; k++ {
		if k < nFixed {
			assert.Contains(t, src, "LIBK("+k.Name()+")")
			continue
		}
		ty, macro := Type(k-nFixed), "GOSHMEMI_LIB_REDUCE_"
		if ty >= Type(len(Types)) {
			ty, macro = ty-Type(len(Types)), "GOSHMEMI_LIB_PART_"
			assert.Equal(t, k, ReducePart(ty))
			assert.Equal(t, "goshmemi_lib_reduce_part_"+Types[ty], k.Name())
		} else {
			assert.Equal(t, k, Reduce(ty))
		}
		kind := "INT"
		if ty.IsFloat() {
			kind = "FLOAT"
		}
		assert.Contains(t, src, macro+kind+"("+Types[ty]+", ")
	}
}
