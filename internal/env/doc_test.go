package env

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnvironmentDoc: docs/environment.md lists every row of Table with its
// default, so the page cannot fall behind the table.
func TestEnvironmentDoc(t *testing.T) {
	b, err := os.ReadFile("../../docs/environment.md")
	require.NoError(t, err)
	doc := string(b)
	for _, v := range Table {
		row := "| `" + v.Name + "` | `" + v.Default + "` |"
		assert.True(t, strings.Contains(doc, row), "docs/environment.md has no row %q", row)
	}
}
