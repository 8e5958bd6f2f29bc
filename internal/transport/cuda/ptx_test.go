package cudatr

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAMOPTXAssembles runs ptxas on the host-AMO module when CUDA's ptxas
// is installed (scripts/cuda.sh installs it; CI has it), so a PTX typo
// fails here instead of on the GPU machine.
func TestAMOPTXAssembles(t *testing.T) {
	ptxas, err := exec.LookPath("ptxas")
	if err != nil {
		t.Skip("ptxas not installed (scripts/cuda.sh installs CUDA's compiler); PTX not assembled here")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "amo.ptx")
	require.NoError(t, os.WriteFile(src, []byte(amoPTX()), 0o600))
	out, err := exec.Command(ptxas, "-arch=sm_90", "-o", filepath.Join(dir, "amo.cubin"), src).CombinedOutput()
	require.NoError(t, err, "ptxas: %s\n%s", out, amoPTX())
}
