package proxy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// pinThread binds the calling OS thread to one core.
func pinThread(cpu int) error {
	var set unix.CPUSet
	set.Set(cpu)
	return unix.SchedSetaffinity(0, &set)
}

// CPUsNear returns the cores local to the PCI device busID (the GPU, whose
// NIC usually sits on the same root complex on GPU nodes) that
// this process may run on, from sysfs's local_cpulist, rotated by skip
// (e.g. local rank x workers, so the PEs sharing a GPU take different
// cores). Without sysfs information it returns the allowed cores; nil when
// even those are unknown. Ref: Documentation/ABI/testing/sysfs-bus-pci
// (local_cpulist).
func CPUsNear(busID string, skip int) []int {
	var allowed unix.CPUSet
	if err := unix.SchedGetaffinity(0, &allowed); err != nil {
		return nil
	}
	var out []int
	if b, err := os.ReadFile(filepath.Join("/sys/bus/pci/devices", strings.ToLower(busID), "local_cpulist")); err == nil {
		for _, c := range ParseCPUList(strings.TrimSpace(string(b))) {
			if allowed.IsSet(c) {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		for c := 0; c < 1024; c++ {
			if allowed.IsSet(c) {
				out = append(out, c)
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	skip %= len(out)
	return append(out[skip:], out[:skip]...)
}

// ParseCPUList parses a kernel cpu list ("0-3,8,10-11"); bad parts are skipped.
func ParseCPUList(s string) []int {
	var out []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, found := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if found {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		for c := a; c <= b; c++ {
			out = append(out, c)
		}
	}
	return out
}
