package collectives

import "fmt"

// Kind is which collective a synchronization belongs to. Every psync word a
// sync writes carries the writer's kind beside the epoch, so a member that
// receives a signal of another kind for the same epoch knows the PEs called
// different collectives (see Team.SyncAs).
type Kind uint8

// The kinds. Values are part of the psync word format: append, never
// renumber (a word of kind 0 is a zeroed word, never a signal).
const (
	KindNone Kind = iota
	KindSync
	KindBarrier
	KindBroadcast
	KindReduce
	KindFCollect
	KindAllToAll
	KindExchange
	KindAlloc
	KindFree
	KindAllocDevice
	KindSplit
	KindDestroy
	KindInit
	KindFinalize
	KindSplit2D
	KindCollect
	KindAllToAllStrided
	KindScan
	kindCount
)

var kindNames = [...]string{
	KindNone:            "nothing",
	KindSync:            "Sync",
	KindBarrier:         "Barrier",
	KindBroadcast:       "Broadcast",
	KindReduce:          "Reduce",
	KindFCollect:        "FCollect",
	KindAllToAll:        "AllToAll",
	KindExchange:        "Exchange",
	KindAlloc:           "Alloc",
	KindFree:            "Free",
	KindAllocDevice:     "AllocDevice",
	KindSplit:           "TeamSplitStrided",
	KindDestroy:         "Team.Destroy",
	KindInit:            "Init",
	KindFinalize:        "Finalize",
	KindCollect:         "Collect",
	KindAllToAllStrided: "AllToAllStrided",
	KindScan:            "Scan",
	KindSplit2D:         "TeamSplit2D",
}

func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("collective kind %d", uint8(k))
}

// A psync word is epoch<<epochShift | flags | kind. Epochs only grow, so a
// wait for "word >= epoch<<epochShift" is still a wait for the epoch,
// whatever kind and flags the writer set.
const (
	epochShift = 8
	kindMask   = 1<<7 - 1
	// flagMismatch: the writer has seen a signal of another kind (or with
	// this flag) in an earlier round of the same sync. Every member ORs
	// it into its later rounds' signals, so by the last round every member
	// knows (see Team.SyncAs).
	flagMismatch = 1 << 7
)

// psyncWord is the word a member of kind k sends in sync e.
func psyncWord(e uint64, k Kind) uint64 { return e<<epochShift | uint64(k) }

func wordEpoch(v uint64) uint64 { return v >> epochShift }

func wordKind(v uint64) Kind { return Kind(v & kindMask) }

// Every kind fits the word's kind bits (a compile error otherwise).
const _ = kindMask + 1 - kindCount
