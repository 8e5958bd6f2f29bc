package main

import (
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// onlineCPUs counts /sys/devices/system/cpu/online ("0-1", "0,2-3"); it
// falls back to the affinity count.
func onlineCPUs() int {
	b, err := os.ReadFile("/sys/devices/system/cpu/online")
	if err != nil {
		return affinityCPUs()
	}
	n := 0
	for _, part := range strings.Split(strings.TrimSpace(string(b)), ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err1 := strconv.Atoi(lo)
		z := a
		var err2 error
		if isRange {
			z, err2 = strconv.Atoi(hi)
		}
		if err1 != nil || err2 != nil || z < a {
			return affinityCPUs()
		}
		n += z - a + 1
	}
	return n
}

func affinityCPUs() int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		return 1
	}
	return set.Count()
}

// pinThread pins the calling OS thread (the caller holds LockOSThread) to
// CPU pe mod online CPUs and returns that CPU.
func pinThread(pe int) (int, error) {
	cpu := pe % max(onlineCPUs(), 1)
	var set unix.CPUSet
	set.Set(cpu)
	if err := unix.SchedSetaffinity(0, &set); err != nil {
		return -1, err
	}
	return cpu, nil
}
