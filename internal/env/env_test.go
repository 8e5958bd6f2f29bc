package env

import (
	"bytes"
	"strings"
	"testing"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in   string
		want uint64
		bad  string // substring of the error; "" = valid
	}{
		{in: "1", want: 1},
		{in: "1048576", want: 1 << 20},
		{in: "4K", want: 4 << 10},
		{in: "4k", want: 4 << 10},
		{in: "512M", want: 512 << 20},
		{in: "2G", want: 2 << 30},
		{in: "1T", want: 1 << 40},
		{in: " 8M ", want: 8 << 20},
		{in: "1KiB", want: 1 << 10},
		{in: "1MB", want: 1 << 20},
		{in: "3gib", want: 3 << 30},
		{in: "8388608T", want: 1 << 63},
		{in: "", bad: "not a positive size"},
		{in: "0", bad: "not a positive size"},
		{in: "0G", bad: "not a positive size"},
		{in: "-1", bad: "not a positive size"},
		{in: "1.5G", bad: "not a positive size"},
		{in: "G", bad: "not a positive size"},
		{in: "12X", bad: "not a positive size"},
		{in: "lots", bad: "not a positive size"},
		{in: "5I", bad: "not a positive size"},
		{in: "5iB", bad: "not a positive size"},
		{in: "I", bad: "not a positive size"},
		{in: "2Mi", want: 2 << 20},
		{in: "8388609T", bad: "overflows 64 bits"},
		{in: "18446744073709551615", bad: "overflows 64 bits"},
		{in: "99999999999999999999", bad: "not a positive size"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseSize(tc.in)
			if tc.bad != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tc.bad)
				assert.Zero(t, got)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseBool(t *testing.T) {
	tests := []struct {
		in   string
		want bool
		bad  bool
	}{
		{in: "1", want: true}, {in: "true", want: true}, {in: "TRUE", want: true},
		{in: "yes", want: true}, {in: "on", want: true}, {in: "y", want: true}, {in: " On ", want: true},
		{in: "0"}, {in: "false"}, {in: "False"}, {in: "no"}, {in: "off"}, {in: "n"}, {in: ""},
		{in: "2", bad: true}, {in: "maybe", bad: true}, {in: "enable", bad: true}, {in: "-1", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseBool(tc.in)
			if tc.bad {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "not a boolean")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestParseDuration(t *testing.T) {
	tests := []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "0", want: 0},
		{in: "10", want: 10 * time.Second},
		{in: "0.5", want: 500 * time.Millisecond},
		{in: " 2 ", want: 2 * time.Second},
		{in: "10s", want: 10 * time.Second},
		{in: "500ms", want: 500 * time.Millisecond},
		{in: "1m30s", want: 90 * time.Second},
		{in: "1h", want: time.Hour},
		{in: "", bad: true},
		{in: "-1", bad: true},
		{in: "-1s", bad: true},
		{in: "soon", bad: true},
		{in: "10 s", bad: true},
		{in: "NaN", bad: true},
		{in: "inf", bad: true},
		{in: "1e300", bad: true},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseDuration(tc.in)
			if tc.bad {
				require.Error(t, err, "got %v", got)
				assert.Contains(t, err.Error(), "not a duration")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// lookupFrom is a fake environment.
func lookupFrom(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func TestReadDefaults(t *testing.T) {
	s, err := Read(lookupFrom(nil))
	require.NoError(t, err)
	require.Len(t, s, len(Table))
	for _, v := range Table {
		st, ok := s[v.Name]
		require.True(t, ok, v.Name)
		assert.Equal(t, "default", st.Source, v.Name)
		assert.Equal(t, v.Default, st.Value, v.Name)
	}
	assert.Equal(t, uint64(1<<30), s.Size("GOSHMEM_SYMMETRIC_SIZE"))
	assert.False(t, s.Bool("GOSHMEM_INFO"))
	assert.False(t, s.Bool("GOSHMEM_DEBUG"))
	assert.Equal(t, time.Duration(0), s.Duration("GOSHMEM_TIMEOUT"))
	assert.Equal(t, "auto", s.String("GOSHMEM_TRANSPORT"))
	assert.Equal(t, "auto", s.String("GOSHMEM_BOOTSTRAP"))
}

func TestReadEnvironment(t *testing.T) {
	s, err := Read(lookupFrom(map[string]string{
		"GOSHMEM_SYMMETRIC_SIZE": "64M",
		"GOSHMEM_DEBUG":          "yes",
		"GOSHMEM_TIMEOUT":        "1.5",
		"GOSHMEM_BOOTSTRAP":      "single",
		"GOSHMEM_INFO":           "", // empty counts as unset
		"UNRELATED":              "x",
	}))
	require.NoError(t, err)
	tests := []struct {
		name, value, source string
	}{
		{"GOSHMEM_SYMMETRIC_SIZE", "64M", "environment"},
		{"GOSHMEM_DEBUG", "yes", "environment"},
		{"GOSHMEM_TIMEOUT", "1.5", "environment"},
		{"GOSHMEM_BOOTSTRAP", "single", "environment"},
		{"GOSHMEM_INFO", "0", "default"},
		{"GOSHMEM_TRANSPORT", "auto", "default"},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.value, s[tc.name].Value, tc.name)
		assert.Equal(t, tc.source, s[tc.name].Source, tc.name)
	}
	assert.Equal(t, uint64(64<<20), s.Size("GOSHMEM_SYMMETRIC_SIZE"))
	assert.True(t, s.Bool("GOSHMEM_DEBUG"))
	assert.Equal(t, 1500*time.Millisecond, s.Duration("GOSHMEM_TIMEOUT"))
	assert.Equal(t, "single", s.String("GOSHMEM_BOOTSTRAP"))
	assert.Panics(t, func() { s.String("GOSHMEM_NOT_A_ROW") }, "names outside the table are programming errors")
}

func TestReadBadValue(t *testing.T) {
	tests := []struct {
		name, value, want string
	}{
		{"GOSHMEM_SYMMETRIC_SIZE", "lots", "not a positive size"},
		{"GOSHMEM_SYMMETRIC_SIZE", "0", "not a positive size"},
		{"GOSHMEM_INFO", "maybe", "not a boolean"},
		{"GOSHMEM_DEBUG", "2", "not a boolean"},
		{"GOSHMEM_TIMEOUT", "soon", "not a duration"},
		{"GOSHMEM_TIMEOUT", "-3s", "not a duration"},
	}
	for _, tc := range tests {
		t.Run(tc.name+"="+tc.value, func(t *testing.T) {
			s, err := Read(lookupFrom(map[string]string{tc.name: tc.value}))
			require.Error(t, err)
			assert.Nil(t, s)
			msg := err.Error()
			assert.Contains(t, msg, "env: "+tc.name+`="`+tc.value+`"`, "the error names the variable and its value")
			assert.Contains(t, msg, tc.want)
			hints := errors.GetAllHints(err)
			require.Len(t, hints, 1)
			for _, v := range Table {
				if v.Name == tc.name {
					assert.Equal(t, v.Help, hints[0], "the hint is the row's help")
				}
			}
		})
	}
}

func TestReadProcessEnvironment(t *testing.T) {
	t.Setenv("GOSHMEM_SYMMETRIC_SIZE", "16M")
	s, err := Read(nil)
	require.NoError(t, err)
	assert.Equal(t, uint64(16<<20), s.Size("GOSHMEM_SYMMETRIC_SIZE"))
	assert.Equal(t, "environment", s["GOSHMEM_SYMMETRIC_SIZE"].Source)
}

func TestTableRows(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Table {
		assert.True(t, strings.HasPrefix(v.Name, "GOSHMEM_"), v.Name)
		assert.False(t, seen[v.Name], "duplicate row %s", v.Name)
		seen[v.Name] = true
		assert.NotEmpty(t, v.Help, v.Name)
		st := Setting{Var: v, Value: v.Default}
		assert.NoError(t, st.validate(), "the default of %s must parse", v.Name)
	}
}

func TestPrint(t *testing.T) {
	s, err := Read(lookupFrom(map[string]string{"GOSHMEM_TIMEOUT": "10s"}))
	require.NoError(t, err)
	var b bytes.Buffer
	s.Print(&b)
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	require.Len(t, lines, len(Table))
	for i := 1; i < len(lines); i++ {
		assert.Less(t, lines[i-1], lines[i], "sorted by name")
	}
	assert.Contains(t, b.String(), "GOSHMEM_TIMEOUT          = 10s      (environment)")
	assert.Contains(t, b.String(), "GOSHMEM_DEBUG            = 0        (default)")
}

func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1", "4K", "512M", "2G", "1T", "1KiB", "", "x", "8388608T"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err != nil {
			assert.Zero(t, n)
			return
		}
		assert.Positive(t, n)
		assert.LessOrEqual(t, n, uint64(1)<<63)
	})
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"0", "10", "1.5", "10s", "500ms", "-1", "inf", "1e300"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s)
		if err == nil {
			assert.GreaterOrEqual(t, d, time.Duration(0), "a valid duration is never negative")
		}
	})
}
