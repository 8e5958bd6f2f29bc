package cudatr

import (
	"encoding/binary"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// TestStateLayoutMatchesHeader compiles include/goshmem/device_state.h with
// gcc and compares every offset, the size and the version with the Go
// mirror, and the control area's layout functions at several team counts.
func TestStateLayoutMatchesHeader(t *testing.T) {
	counts := []int{2, 32, 33, 1088, 16384}
	src := `#include <stdio.h>
#include <stddef.h>
#include "goshmem/device_state.h"
#define P(f) printf(#f " %zu\n", offsetof(goshmemi_device_state_t, f))
#define T(f) printf("team." #f " %zu\n", offsetof(goshmemi_team_t, f))
static const unsigned counts[] = {2, 32, 33, 1088, 16384};
int main(void) {
  P(version); P(size); P(my_pe); P(n_pes); P(heap_size); P(heap_base); P(teams); P(team_epoch); P(max_teams);
  P(team_inline); P(error_code); P(error_info); P(all_peers_same_device); P(remote_transport);
  P(proxy_state); P(ibgda_state); P(cxi_state); P(error_host); P(coll_ll_bytes); P(reserved);
  T(start); T(stride); T(size); T(my_index); T(slot);
  printf("sizeof %zu\nteam %zu\nstateversion %u\nllslot %u\nteamslot %u\ninline %u\n", sizeof(goshmemi_device_state_t),
         sizeof(goshmemi_team_t), GOSHMEMI_DEVICE_STATE_VERSION, (unsigned)GOSHMEMI_COLL_LL_SLOT_BYTES,
         (unsigned)GOSHMEMI_TEAM_SLOT_BYTES, (unsigned)GOSHMEMI_INLINE_TEAMS);
  printf("scratchinslot %u\nllinslot %u\nslot.5 %llu\n", (unsigned)GOSHMEMI_COLL_SCRATCH_IN_SLOT,
         (unsigned)GOSHMEMI_COLL_LL_IN_SLOT, (unsigned long long)goshmemi_team_slot_off(5));
  printf("streamsyncoff %u\nstreamsyncrounds %u\nstreamsyncflat %u\npsyncslot %u\n", (unsigned)GOSHMEMI_STREAM_SYNC_OFF,
         (unsigned)GOSHMEMI_STREAM_SYNC_ROUNDS, (unsigned)GOSHMEMI_STREAM_SYNC_FLAT_MAX, (unsigned)GOSHMEMI_PSYNC_SLOT_BYTES);
  for (unsigned i = 0; i < sizeof counts / sizeof counts[0]; i++)
    printf("control.%u %llu\n", counts[i], (unsigned long long)goshmemi_device_control_bytes(counts[i]));
  return 0;
}`
	got := testutil.CValues(t, src)
	want := map[string]uint64{
		"version": offVersion, "size": offSize, "my_pe": offMyPE, "n_pes": offNPEs, "heap_size": offHeapSize,
		"heap_base": offHeapBase, "teams": offTeams, "team_epoch": offTeamEpoch, "max_teams": offMaxTeams,
		"team_inline": offInline, "error_code": offErrorCode, "error_info": offErrorInfo, "all_peers_same_device": offAllSameDev, "remote_transport": offRemote,
		"proxy_state": offProxyState, "ibgda_state": offIBGDAState, "cxi_state": offCXIState, "error_host": offErrorHost,
		"coll_ll_bytes": offCollLL, "reserved": offReserved,
		"team.start": 0, "team.stride": 4, "team.size": 8, "team.my_index": 12, "team.slot": 16,
		"sizeof": StateSize, "team": TeamSize, "stateversion": StateVersion,
		"llslot": collLLSlot, "teamslot": TeamSlotBytes, "inline": InlineTeams, "scratchinslot": collScratchInSlot,
		"llinslot": collLLInSlot, "slot.5": teamSlotOff(5), "streamsyncoff": StreamSyncOff, "streamsyncrounds": StreamSyncRounds,
		"streamsyncflat": StreamSyncFlatMax, "psyncslot": psyncSlot,
	}
	for _, n := range counts {
		want[fmt.Sprintf("control.%d", n)] = ControlBytes(n)
		assert.Equal(t, uint64(n)*TeamSlotBytes+controlReserved, ControlBytes(n), "%d team slots", n)
	}
	for k, v := range want {
		n, ok := got[k]
		if assert.True(t, ok, "gcc printed no %s", k) {
			assert.Equal(t, v, n, "%s: Go mirror vs device_state.h", k)
		}
	}
	assert.Equal(t, uint32(2), uint32(StateVersion>>16), "version 2: the team table left the struct")

	// And the encoder writes the fields where C reads them.
	s := State{MyPE: 3, NPEs: 4, HeapSize: 1 << 30, AllPeersSameDevice: true, RemoteTransport: RemoteProxy,
		ProxyState: 0x1000, IBGDAState: 0x2000, CXIState: 0x3000, ErrorHost: 0x4000, CollLLBytes: 2048,
		Teams: 0x5000, TeamEpoch: 0x6000, MaxTeams: 1088}
	s.HeapBase[2] = 0xdead0000
	s.InitTeams(4)
	s.InlineTeams[31] = Team{Start: 1, Stride: 2, Size: 2, MyIndex: 1, Slot: 31}
	b := s.Bytes()
	require.Len(t, b, StateSize)
	le := binary.LittleEndian
	assert.EqualValues(t, StateVersion, le.Uint32(b[offVersion:]))
	assert.EqualValues(t, 3, le.Uint32(b[offMyPE:]))
	assert.EqualValues(t, 0xdead0000, le.Uint64(b[offHeapBase+16:]))
	assert.EqualValues(t, 0x5000, le.Uint64(b[offTeams:]))
	assert.EqualValues(t, 0x6000, le.Uint64(b[offTeamEpoch:]))
	assert.EqualValues(t, 1088, le.Uint32(b[offMaxTeams:]))
	assert.Equal(t, InitialTeam(0, 4, 3).Bytes(), b[offInline:offInline+TeamSize], "inline row 0: the world")
	assert.EqualValues(t, -1, int32(le.Uint32(b[offInline+TeamSize+12:])), "inline row 1 unused")
	assert.EqualValues(t, 31, le.Uint32(b[offInline+TeamSize*31+16:]), "inline row 31's slot")
	assert.EqualValues(t, 1, le.Uint32(b[offAllSameDev:]))
	assert.EqualValues(t, RemoteProxy, le.Uint32(b[offRemote:]))
	assert.EqualValues(t, 0x1000, le.Uint64(b[offProxyState:]))
	assert.EqualValues(t, 0x2000, le.Uint64(b[offIBGDAState:]))
	assert.EqualValues(t, 0x3000, le.Uint64(b[offCXIState:]))
	assert.EqualValues(t, 0x4000, le.Uint64(b[offErrorHost:]))
	assert.EqualValues(t, 2048, le.Uint32(b[offCollLL:]))
}

// TestTeamTableImage: the epochs first, all zero, then the rows: the world
// in row 0, every other row unused (my_index -1) with its own slot.
func TestTeamTableImage(t *testing.T) {
	const n = 40
	b, teams, epochs := TeamTableImage(n, 4, 3, 0x10000)
	require.Len(t, b, TeamTableBytes(n))
	assert.EqualValues(t, 0x10000, epochs)
	assert.EqualValues(t, 0x10000+8*n, teams)
	le := binary.LittleEndian
	for i := range n {
		assert.Zero(t, le.Uint64(b[8*i:]), "epoch %d", i)
	}
	row := func(i int) Team {
		r := b[8*n+TeamSize*i:]
		return Team{Start: int32(le.Uint32(r)), Stride: int32(le.Uint32(r[4:])), Size: int32(le.Uint32(r[8:])),
			MyIndex: int32(le.Uint32(r[12:])), Slot: int32(le.Uint32(r[16:]))}
	}
	assert.Equal(t, Team{Start: 0, Stride: 1, Size: 4, MyIndex: 3, Slot: 0}, row(0))
	assert.Equal(t, Team{MyIndex: -1, Slot: 1}, row(1))
	assert.Equal(t, Team{MyIndex: -1, Slot: n - 1}, row(n-1))
}
