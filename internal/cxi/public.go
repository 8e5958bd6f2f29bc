package cxi

import pub "github.com/goshmem/goshmem/cxi"

// The types a program configures and reads are defined in the public
// package github.com/goshmem/goshmem/cxi; these aliases let the machinery
// use them by their short names.
type (
	// Config configures one rank of the triggered path.
	Config = pub.Config
	// Budget is the NIC state the triggered path may use per rank.
	Budget = pub.Budget
	// Msg is an active message.
	Msg = pub.Msg
	// Handler runs an active message on the host.
	Handler = pub.Handler
	// Stats are the monitor's counters.
	Stats = pub.Stats
)

// Engine names (GOSHMEM_CXI_ENGINE).
const (
	EngineAuto     = pub.EngineAuto
	EngineFabric   = pub.EngineFabric
	EngineSoftware = pub.EngineSoftware
)

// GapBounds are the upper bounds of Stats.Gaps' buckets.
var GapBounds = pub.GapBounds

// Rank implements the public interface.
var _ pub.Rank = (*Rank)(nil)
