package testutil

import (
	"fmt"
	"os"
	"strings"
)

// SelfStatus returns the value of field in /proc/self/status (e.g.
// "CapEff", "FDSize"), trimmed.
func SelfStatus(field string) (string, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "", err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			return strings.TrimSpace(v), nil
		}
	}
	return "", fmt.Errorf("/proc/self/status has no %s line", field)
}
