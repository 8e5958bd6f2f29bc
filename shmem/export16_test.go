package shmem

// PControlLevel is the level PControl last recorded (1 before any call),
// or -1 before Init.
func PControlLevel() int {
	if r := current.Load(); r != nil {
		return r.pcontrolLevel()
	}
	return -1
}

// MaxAllocAlign is AllocAligned's largest alignment.
func MaxAllocAlign() int { return maxAllocAlign() }
