package shmem

// Device team handles of the predefined teams, for consts_test.go.
const (
	DeviceTeamWorld  = deviceTeamWorld
	DeviceTeamShared = deviceTeamShared
	DeviceTeamNode   = deviceTeamNode
)
