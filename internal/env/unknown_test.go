package env

import (
	"bytes"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/logx"
)

func TestUnknown(t *testing.T) {
	tests := []struct {
		name    string
		environ []string
		want    []Misspelling
	}{
		{name: "none", environ: nil},
		{name: "rows and others", environ: []string{"PATH=/bin", "GOSHMEM_INFO=1", "GOSHMEM_TIMEOUT=", "HOME=/root", "GOSHMEM_OFI_IFACE=eth0"}},
		{name: "sanctioned", environ: []string{"GOSHMEM_CUDA_FORCE=1", "GOSHMEM_REQUIRE_NVCC=1"}},
		{name: "one letter dropped", environ: []string{"GOSHMEM_SYMETRIC_SIZE=1G"},
			want: []Misspelling{{"GOSHMEM_SYMETRIC_SIZE", "GOSHMEM_SYMMETRIC_SIZE"}}},
		{name: "transposed", environ: []string{"GOSHMEM_TIMEUOT=1s"},
			want: []Misspelling{{"GOSHMEM_TIMEUOT", "GOSHMEM_TIMEOUT"}}},
		{name: "lower case", environ: []string{"goshmem_info=1"},
			want: []Misspelling{{"goshmem_info", "GOSHMEM_INFO"}}},
		{name: "no underscore", environ: []string{"GOSHMEMDEBUG=1"},
			want: []Misspelling{{"GOSHMEMDEBUG", "GOSHMEM_DEBUG"}}},
		{name: "plural", environ: []string{"GOSHMEM_PROXY_WORKER=2"},
			want: []Misspelling{{"GOSHMEM_PROXY_WORKER", "GOSHMEM_PROXY_WORKERS"}}},
		{name: "nothing close", environ: []string{"GOSHMEM_FROBNICATE=1"},
			want: []Misspelling{{"GOSHMEM_FROBNICATE", ""}}},
		{name: "a removed diagnostic", environ: []string{"GOSHMEM_PROXY_SUBMIT=copies"},
			want: []Misspelling{{"GOSHMEM_PROXY_SUBMIT", ""}}},
		{name: "no value", environ: []string{"GOSHMEM_DEBGU"},
			want: []Misspelling{{"GOSHMEM_DEBGU", "GOSHMEM_DEBUG"}}},
		{name: "sorted, once each", environ: []string{"GOSHMEM_TRANSPORTT=ofi", "GOSHMEM_INFOO=1", "GOSHMEM_TRANSPORTT=shm"},
			want: []Misspelling{{"GOSHMEM_INFOO", "GOSHMEM_INFO"}, {"GOSHMEM_TRANSPORTT", "GOSHMEM_TRANSPORT"}}},
		{name: "not ours", environ: []string{"NVSHMEM_SYMMETRIC_SIZE=1G", "XGOSHMEM_INFO=1", "GOSH=1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Unknown(tc.environ))
		})
	}
}

func TestWarnUnknown(t *testing.T) {
	var b bytes.Buffer
	WarnUnknown(logx.New(nil, &b), []string{"GOSHMEM_SYMETRIC_SIZE=1G", "GOSHMEM_INFO=1", "GOSHMEM_FROBNICATE=1"})
	assert.Equal(t, "goshmem: warning: GOSHMEM_FROBNICATE is not a goshmem variable (GOSHMEM_INFO=1 lists them)\n"+
		"goshmem: warning: GOSHMEM_SYMETRIC_SIZE is not a goshmem variable; did you mean GOSHMEM_SYMMETRIC_SIZE?\n", b.String())

	b.Reset()
	WarnUnknown(logx.New(nil, &b), []string{"GOSHMEM_INFO=1", "PATH=/bin"})
	assert.Empty(t, b.String(), "known variables print nothing")
}

// TestWarnUnknownSlog: with a *slog.Logger each warning is a record with
// the variable (and its likely meaning) as attributes; nothing is written.
func TestWarnUnknownSlog(t *testing.T) {
	var b bytes.Buffer
	h := slog.NewJSONHandler(&b, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	WarnUnknown(logx.New(slog.New(h), nil), []string{"GOSHMEM_SYMETRIC_SIZE=1G", "GOSHMEM_FROBNICATE=1"})
	assert.Equal(t, `{"level":"WARN","msg":"not a goshmem variable (GOSHMEM_INFO=1 lists them)","setting":"GOSHMEM_FROBNICATE"}`+"\n"+
		`{"level":"WARN","msg":"not a goshmem variable","setting":"GOSHMEM_SYMETRIC_SIZE","closest":"GOSHMEM_SYMMETRIC_SIZE"}`+"\n", b.String())
}

func TestEditDistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"a", "", 1}, {"", "abc", 3}, {"abc", "abc", 0},
		{"kitten", "sitting", 3}, {"GOSHMEM_TIMEUOT", "GOSHMEM_TIMEOUT", 2},
		{"GOSHMEM_SYMETRIC_SIZE", "GOSHMEM_SYMMETRIC_SIZE", 1},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, editDistance(tc.a, tc.b), "%q %q", tc.a, tc.b)
		assert.Equal(t, tc.want, editDistance(tc.b, tc.a), "symmetric: %q %q", tc.b, tc.a)
	}
}

// TestRepositoryVariables: every GOSHMEM_* variable the repository's Go
// code, scripts and Makefile read or set is a row or Sanctioned, so a
// normal test run never warns. (C macros such as -DGOSHMEM_REMOTE_TRANSPORTS
// are not environment variables and are not matched.)
func TestRepositoryVariables(t *testing.T) {
	root := filepath.Join("..", "..")
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		t.Skipf("repository root not found at %s: %v", root, err)
	}
	uses := regexp.MustCompile(`(?:Getenv|LookupEnv|Setenv)\("(GOSHMEM_[A-Z0-9_]+)"` + // Go reads and sets
		`|"(GOSHMEM_[A-Z0-9_]+)=` + // Go: a child's environment entry
		`|\$\{?(GOSHMEM_[A-Z0-9_]+)` + // shell and make expansions
		`|-x (GOSHMEM_[A-Z0-9_]+)` + // mpirun -x
		`|(?:^|[\s;]|export )(GOSHMEM_[A-Z0-9_]+)=`) // shell assignments
	known := map[string]bool{}
	for _, v := range Table {
		known[v.Name] = true
	}
	for _, n := range Sanctioned {
		known[n] = true
	}
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			// This package's own tests spell names wrong on purpose.
			if n := d.Name(); n == ".git" || n == "results" || n == "testdata" || path == filepath.Join(root, "internal", "env") {
				return filepath.SkipDir
			}
			return nil
		}
		n := d.Name()
		if !strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, ".sh") && n != "Makefile" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range uses.FindAllStringSubmatch(string(b), -1) {
			for _, name := range m[1:] {
				if name == "" {
					continue
				}
				found++
				assert.True(t, known[name], "%s uses %s, which is neither a row of Table nor Sanctioned", path, name)
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Positive(t, found, "the walk found the repository's uses")
}
