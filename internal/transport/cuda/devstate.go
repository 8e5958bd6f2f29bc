package cudatr

import (
	"encoding/binary"
)

// Go mirror of include/goshmem/device_state.h (goshmemi_device_state_t).
// devstate_test.go compiles the header with gcc and checks every offset and
// the size against these constants, so the two cannot drift apart.
// Ref: include/goshmem/device_state.h.
const (
	MaxPEs   = 128 // GOSHMEMI_MAX_PES
	MaxTeams = 32  // GOSHMEMI_MAX_TEAMS

	psyncRounds = 32 // GOSHMEMI_PSYNC_ROUNDS
	psyncLine   = 64 // GOSHMEMI_PSYNC_LINE
	// StreamSyncOff, StreamSyncRounds and StreamSyncFlatMax are
	// GOSHMEMI_STREAM_SYNC_OFF, _ROUNDS and _FLAT_MAX: within a team's psync
	// slot, the words the on-stream syncs' memory operations write and wait
	// on: one word per member in the first line for a team of at most
	// StreamSyncFlatMax (StreamSyncFlatWord), else one line per
	// dissemination round (StreamSyncWord).
	StreamSyncOff     = 576
	StreamSyncRounds  = 7
	StreamSyncFlatMax = 8
	// collScratchSlot is GOSHMEMI_COLL_SCRATCH_SLOT_BYTES: the device
	// collectives' scratch per team slot (coll_data.h).
	collScratchSlot = 16384
	// collLLOff and collLLSlot are GOSHMEMI_COLL_LL_OFF and
	// GOSHMEMI_COLL_LL_SLOT_BYTES: the small collectives' LL packets per
	// team slot (coll_data.h), zeroed by SetTeam.
	collLLOff  = MaxTeams*psyncRounds*psyncLine + 65536 + MaxTeams*collScratchSlot
	collLLSlot = 16384
	// ControlBytes is GOSHMEMI_DEVICE_CONTROL_BYTES: the front of every
	// device heap (psync slots, reserved 64 KiB, collective scratch, LL
	// packets) that the allocator never hands out.
	ControlBytes = collLLOff + MaxTeams*collLLSlot

	offVersion    = 0
	offSize       = 4
	offMyPE       = 8
	offNPEs       = 12
	offHeapSize   = 16
	offHeapBase   = 24
	offTeamEpoch  = offHeapBase + 8*MaxPEs
	offTeams      = offTeamEpoch + 8*MaxTeams
	teamSize      = 24
	offErrorCode  = offTeams + teamSize*MaxTeams
	offErrorInfo  = offErrorCode + 8
	offAllSameDev = offErrorInfo + 8
	offRemote     = offAllSameDev + 4
	offProxyState = offAllSameDev + 8
	offIBGDAState = offProxyState + 8
	offCXIState   = offIBGDAState + 8
	offErrorHost  = offCXIState + 8
	offCollLL     = offErrorHost + 8
	offReserved   = offCollLL + 8
	StateSize     = offReserved + 8*10
	StateVersion  = 1<<16 + StateSize

	// goshmemi_error_record_t (the host-mapped copy of the first device
	// error, at State.ErrorHost).
	errRecCode   = 0
	errRecInfo   = 8
	errRecPE     = 16
	errRecBlock  = 20
	errRecThread = 24
	errRecDone   = 28
	errRecWhat   = 32
	errRecSize   = 128
)

// Team is one row of the device team table (goshmemi_team_t).
type Team struct {
	Start, Stride, Size, MyIndex, Slot int32
}

// State is the host-side image of the device state, encoded with Bytes.
type State struct {
	MyPE, NPEs         int32
	HeapSize           uint64
	HeapBase           [MaxPEs]uint64
	Teams              [MaxTeams]Team
	AllPeersSameDevice bool
	// RemoteTransport is GOSHMEMI_REMOTE_*: how the GPU reaches a PE whose
	// HeapBase is 0 (RemoteNone, RemoteProxy, RemoteIBGDA).
	RemoteTransport uint32
	// Device addresses of the per-transport device states, 0 when absent.
	ProxyState, IBGDAState, CXIState uint64
	// ErrorHost is the device address of the host-mapped error record.
	ErrorHost uint64
	// CollLLBytes is GOSHMEM_GPU_COLL_LL: the largest block the small
	// device collectives send as LL packets (0: never).
	CollLLBytes uint32
}

// Values of State.RemoteTransport (GOSHMEMI_REMOTE_*).
const (
	RemoteNone  uint32 = 0
	RemoteProxy uint32 = 1
	RemoteIBGDA uint32 = 2
)

// Bytes encodes s exactly as the C struct lays it out (little-endian).
func (s *State) Bytes() []byte {
	b := make([]byte, StateSize)
	le := binary.LittleEndian
	le.PutUint32(b[offVersion:], StateVersion)
	le.PutUint32(b[offSize:], StateSize)
	le.PutUint32(b[offMyPE:], uint32(s.MyPE))
	le.PutUint32(b[offNPEs:], uint32(s.NPEs))
	le.PutUint64(b[offHeapSize:], s.HeapSize)
	for i, v := range s.HeapBase {
		le.PutUint64(b[offHeapBase+8*i:], v)
	}
	for i, t := range s.Teams {
		o := offTeams + teamSize*i
		le.PutUint32(b[o:], uint32(t.Start))
		le.PutUint32(b[o+4:], uint32(t.Stride))
		le.PutUint32(b[o+8:], uint32(t.Size))
		le.PutUint32(b[o+12:], uint32(t.MyIndex))
		le.PutUint32(b[o+16:], uint32(t.Slot))
	}
	if s.AllPeersSameDevice {
		le.PutUint32(b[offAllSameDev:], 1)
	}
	le.PutUint32(b[offRemote:], s.RemoteTransport)
	le.PutUint64(b[offProxyState:], s.ProxyState)
	le.PutUint64(b[offIBGDAState:], s.IBGDAState)
	le.PutUint64(b[offCXIState:], s.CXIState)
	le.PutUint64(b[offErrorHost:], s.ErrorHost)
	le.PutUint32(b[offCollLL:], s.CollLLBytes)
	return b
}

// StreamSyncWord is the heap offset of team slot slot's on-stream sync
// word of dissemination round k (GOSHMEMI_STREAM_SYNC_OFF, one line per
// round).
func StreamSyncWord(slot, k int) uint64 {
	return uint64(slot*psyncRounds*psyncLine + StreamSyncOff + k*psyncLine)
}

// StreamSyncFlatWord is the heap offset of team slot slot's flat on-stream
// sync word that member i writes (i < StreamSyncFlatMax).
func StreamSyncFlatWord(slot, i int) uint64 {
	return uint64(slot*psyncRounds*psyncLine + StreamSyncOff + 8*i)
}
