package cuda

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestDriverHeaderMatchesCUDAH cross-checks driver.h against the SDK's
// cuda.h where one is installed (the SDK is never needed to build): every
// constant must have cuda.h's value (_Static_assert) and every PFN_<sym>
// typedef must match the declaration of <sym> (incompatible pointer types
// are errors). Skips, saying so, when no cuda.h is found.
func TestDriverHeaderMatchesCUDAH(t *testing.T) {
	var inc string
	for _, dir := range []string{os.Getenv("CUDA_HOME") + "/include", "/usr/local/cuda/include", "/usr/include"} {
		if _, err := os.Stat(filepath.Join(dir, "cuda.h")); err == nil && dir != "/include" {
			inc = dir
			break
		}
	}
	if inc == "" {
		t.Skip("no cuda.h (CUDA SDK) here to cross-check driver.h against")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler %q: %v", cc, err)
	}
	hdr, err := os.ReadFile("driver.h")
	require.NoError(t, err)
	text := string(hdr)

	var src strings.Builder
	src.WriteString("#include <cuda.h>\n#include <stddef.h>\n")
	n := 0
	for _, m := range regexp.MustCompile(`(?m)^\s*((?:CUDA|CU)_[A-Z0-9_]+) = (\d+),?\s*$`).FindAllStringSubmatch(text, -1) {
		src.WriteString("_Static_assert(" + m[1] + " == " + m[2] + ", \"" + m[1] + "\");\n")
		n++
	}
	for _, m := range regexp.MustCompile(`(?m)^#define (CU_[A-Z0-9_]+) (0x[0-9a-fA-F]+|\d+)\s*$`).FindAllStringSubmatch(text, -1) {
		src.WriteString("_Static_assert(" + m[1] + " == " + m[2] + ", \"" + m[1] + "\");\n")
		n++
	}
	require.Greater(t, n, 90, "constants found in driver.h")
	i := strings.Index(text, "/* ---- function pointer typedefs")
	j := strings.LastIndex(text, "#endif")
	require.True(t, i > 0 && j > i)
	src.WriteString(text[i:j])
	syms := regexp.MustCompile(`\(\*PFN_(\w+)\)`).FindAllStringSubmatch(text[i:j], -1)
	require.Greater(t, len(syms), 45)
	for _, m := range syms {
		src.WriteString("PFN_" + m[1] + " check_" + m[1] + " = " + m[1] + ";\n")
	}
	// The structs driver.h spells out must have cuda.h's layout: the same
	// size and field offsets as its _Static_asserts state.
	for _, m := range regexp.MustCompile(`(?m)^_Static_assert\((sizeof\(CUmem[^"]*), "CUmem`).FindAllStringSubmatch(text, -1) {
		src.WriteString("_Static_assert(" + m[1] + ", \"layout\");\n")
		n++
	}
	file := filepath.Join(t.TempDir(), "hdrcheck.c")
	require.NoError(t, os.WriteFile(file, []byte(src.String()), 0o644))
	out, err := exec.Command(cc, "-fsyntax-only", "-Werror", "-Wall", "-I", inc, file).CombinedOutput()
	require.NoError(t, err, "driver.h disagrees with %s/cuda.h:\n%s", inc, out)
	t.Logf("driver.h: %d constants and %d signatures match %s/cuda.h", n, len(syms), inc)
}
