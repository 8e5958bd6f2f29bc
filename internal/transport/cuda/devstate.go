package cudatr

import (
	"encoding/binary"
)

// Go mirror of include/goshmem/device_state.h (goshmemi_device_state_t).
// devstate_test.go compiles the header with gcc and checks every offset and
// the size against these constants, so the two cannot drift apart.
// Ref: include/goshmem/device_state.h.
const (
	MaxPEs = 128 // GOSHMEMI_MAX_PES

	psyncRounds = 32 // GOSHMEMI_PSYNC_ROUNDS
	psyncLine   = 64 // GOSHMEMI_PSYNC_LINE
	psyncSlot   = psyncRounds * psyncLine
	// StreamSyncOff, StreamSyncRounds and StreamSyncFlatMax are
	// GOSHMEMI_STREAM_SYNC_OFF, _ROUNDS and _FLAT_MAX: within a team's psync
	// slot, the words the on-stream syncs' memory operations write and wait
	// on: one word per member in the first line for a team of at most
	// StreamSyncFlatMax (StreamSyncFlatWord), else one line per
	// dissemination round (StreamSyncWord).
	StreamSyncOff     = 576
	StreamSyncRounds  = 7
	StreamSyncFlatMax = 8
	// collScratchSlot and collLLSlot are GOSHMEMI_COLL_SCRATCH_SLOT_BYTES
	// and GOSHMEMI_COLL_LL_SLOT_BYTES: a team slot's device collective
	// scratch and the small collectives' LL packets (coll_data.h; the LL
	// packets are zeroed by SetTeam), at collScratchInSlot and
	// collLLInSlot within the slot (GOSHMEMI_COLL_*_IN_SLOT).
	collScratchSlot   = 16384
	collLLSlot        = 16384
	collScratchInSlot = psyncSlot
	collLLInSlot      = collScratchInSlot + collScratchSlot
	// TeamSlotBytes is GOSHMEMI_TEAM_SLOT_BYTES: the device heap a team
	// slot takes on every PE (psync slot, scratch and LL packets); slot s
	// is at s*TeamSlotBytes (goshmemi_team_slot_off).
	TeamSlotBytes = collLLInSlot + collLLSlot
	// controlReserved is GOSHMEMI_CONTROL_RESERVED_BYTES, after the last
	// team slot.
	controlReserved = 65536
	// InlineTeams is GOSHMEMI_INLINE_TEAMS: the team table's first rows,
	// which the state also holds (State.InlineTeams).
	InlineTeams = 32

	offVersion    = 0
	offSize       = 4
	offMyPE       = 8
	offNPEs       = 12
	offHeapSize   = 16
	offHeapBase   = 24
	offTeams      = offHeapBase + 8*MaxPEs
	offTeamEpoch  = offTeams + 8
	offMaxTeams   = offTeamEpoch + 8
	offInline     = offMaxTeams + 8
	offErrorCode  = offInline + TeamSize*InlineTeams
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
	StateVersion  = 2<<16 + StateSize

	// TeamSize is sizeof(goshmemi_team_t), a row of the device team table.
	TeamSize = 24

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

// Bytes encodes the row as the C struct lays it out.
func (tm Team) Bytes() []byte {
	b := make([]byte, TeamSize)
	le := binary.LittleEndian
	le.PutUint32(b[0:], uint32(tm.Start))
	le.PutUint32(b[4:], uint32(tm.Stride))
	le.PutUint32(b[8:], uint32(tm.Size))
	le.PutUint32(b[12:], uint32(tm.MyIndex))
	le.PutUint32(b[16:], uint32(tm.Slot))
	return b
}

// TeamTableBytes is the device memory a state's team epochs and team
// table take for maxTeams slots (TeamTableImage lays them out).
func TeamTableBytes(maxTeams int) int { return 8*maxTeams + TeamSize*maxTeams }

// InitialTeam is row i of a PE's team table at Init: the world team of
// npes PEs with this PE me in row 0, every other row unused (MyIndex -1).
func InitialTeam(i, npes, me int) Team {
	if i == 0 {
		return Team{Start: 0, Stride: 1, Size: int32(npes), MyIndex: int32(me), Slot: 0}
	}
	return Team{MyIndex: -1, Slot: int32(i)}
}

// TeamTableImage is the initial team table memory of PE me of npes for
// maxTeams slots at device address base: every epoch 0, every row
// InitialTeam. It returns the bytes and the State fields that point at
// them (TeamEpoch at base, Teams after the epochs).
func TeamTableImage(maxTeams, npes, me int, base uint64) (b []byte, teams, epochs uint64) {
	b = make([]byte, TeamTableBytes(maxTeams))
	teams = base + 8*uint64(maxTeams)
	for i := range maxTeams {
		copy(b[8*maxTeams+TeamSize*i:], InitialTeam(i, npes, me).Bytes())
	}
	return b, teams, base
}

// InitTeams sets the state's inline rows (the table's first InlineTeams)
// to InitialTeam of npes PEs, the state's MyPE among them.
func (s *State) InitTeams(npes int) {
	for i := range s.InlineTeams {
		s.InlineTeams[i] = InitialTeam(i, npes, int(s.MyPE))
	}
}

// State is the host-side image of the device state, encoded with Bytes.
type State struct {
	MyPE, NPEs int32
	HeapSize   uint64
	HeapBase   [MaxPEs]uint64
	// Teams and TeamEpoch are the device addresses of the team table
	// (MaxTeams rows) and the team slots' epochs (MaxTeams words).
	Teams, TeamEpoch uint64
	// MaxTeams is GOSHMEM_MAX_TEAMS.
	MaxTeams uint32
	// InlineTeams are the team table's first rows, which kernels read
	// from the state (goshmemi_team_row).
	InlineTeams        [InlineTeams]Team
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
	le.PutUint64(b[offTeams:], s.Teams)
	le.PutUint64(b[offTeamEpoch:], s.TeamEpoch)
	le.PutUint32(b[offMaxTeams:], s.MaxTeams)
	for i, tm := range s.InlineTeams {
		copy(b[offInline+TeamSize*i:], tm.Bytes())
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

// ControlBytes is goshmemi_device_control_bytes(maxTeams): the front of
// every device heap (maxTeams team slots, then 64 KiB reserved) that the
// allocator never hands out.
func ControlBytes(maxTeams int) uint64 {
	return uint64(maxTeams)*TeamSlotBytes + controlReserved
}

// teamSlotOff is goshmemi_team_slot_off(slot): the heap offset of team
// slot slot (its psync slot).
func teamSlotOff(slot int) uint64 { return uint64(slot) * TeamSlotBytes }

// StreamSyncWord is the heap offset of team slot slot's on-stream sync
// word of dissemination round k (GOSHMEMI_STREAM_SYNC_OFF, one line per
// round).
func StreamSyncWord(slot, k int) uint64 {
	return teamSlotOff(slot) + StreamSyncOff + uint64(k)*psyncLine
}

// StreamSyncFlatWord is the heap offset of team slot slot's flat on-stream
// sync word that member i writes (i < StreamSyncFlatMax).
func StreamSyncFlatWord(slot, i int) uint64 {
	return teamSlotOff(slot) + StreamSyncOff + 8*uint64(i)
}
