package env

import (
	"fmt"
	"log/slog"
	"sort"
	"strings"

	"github.com/goshmem/goshmem/internal/logx"
)

// Misspelling is a variable of the environment that looks like goshmem's
// (its name starts with GOSHMEM, in any case) but is neither a row of
// Table nor Sanctioned: a setting that would be silently ignored.
type Misspelling struct {
	// Name is the variable as set.
	Name string
	// Closest is the row whose name is nearest to Name by edit distance,
	// or "" when no row is close enough to be a likely meaning.
	Closest string
}

// Unknown returns the misspelled GOSHMEM_* variables of environ (in
// os.Environ's "NAME=value" form), sorted by name, each reported once.
// It is a pure function of its argument.
func Unknown(environ []string) []Misspelling {
	known := make(map[string]bool, len(Table)+len(Sanctioned))
	for _, v := range Table {
		known[v.Name] = true
	}
	for _, n := range Sanctioned {
		known[n] = true
	}
	seen := map[string]bool{}
	var out []Misspelling
	for _, kv := range environ {
		name, _, _ := strings.Cut(kv, "=")
		if known[name] || seen[name] || !strings.HasPrefix(strings.ToUpper(name), "GOSHMEM") {
			continue
		}
		seen[name] = true
		out = append(out, Misspelling{Name: name, Closest: closest(name)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// WarnUnknown logs one warning per misspelled variable of environ
// (Unknown): a record with the attributes setting (and closest, the likely
// meaning), or the line "goshmem: warning: ..." without a *slog.Logger.
// The runtime calls it once, on PE 0, at Init.
func WarnUnknown(lg *logx.Logger, environ []string) {
	for _, m := range Unknown(environ) {
		if m.Closest != "" {
			lg.Warn(fmt.Sprintf("goshmem: warning: %s is not a goshmem variable; did you mean %s?\n", m.Name, m.Closest),
				"not a goshmem variable", slog.String("setting", m.Name), slog.String("closest", m.Closest))
		} else {
			lg.Warn(fmt.Sprintf("goshmem: warning: %s is not a goshmem variable (GOSHMEM_INFO=1 lists them)\n", m.Name),
				"not a goshmem variable (GOSHMEM_INFO=1 lists them)", slog.String("setting", m.Name))
		}
	}
}

// closest returns the row nearest to name (compared upper-cased, so a
// lower-case spelling of a row finds it), or "" when even the nearest
// differs in more than a third of the name after the GOSHMEM_ prefix
// (at least 2 edits are always allowed). Ties go to the earlier row.
func closest(name string) string {
	up := strings.ToUpper(name)
	best, bestD := "", -1
	for _, v := range Table {
		if d := editDistance(up, v.Name); bestD < 0 || d < bestD {
			best, bestD = v.Name, d
		}
	}
	limit := max(2, (len(up)-len("GOSHMEM_"))/3)
	if bestD < 0 || bestD > limit {
		return ""
	}
	return best
}

// editDistance is the Levenshtein distance between a and b (bytes:
// variable names are ASCII).
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
