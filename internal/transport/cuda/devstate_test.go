package cudatr

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// TestStateLayoutMatchesHeader compiles include/goshmem/device_state.h with
// gcc and compares every offset, the size and the version with the Go mirror.
func TestStateLayoutMatchesHeader(t *testing.T) {
	src := `#include <stdio.h>
#include <stddef.h>
#include "goshmem/device_state.h"
#define P(f) printf(#f " %zu\n", offsetof(goshmemi_device_state_t, f))
int main(void) {
  P(version); P(size); P(my_pe); P(n_pes); P(heap_size); P(heap_base); P(team_epoch);
  P(teams); P(error_code); P(error_info); P(all_peers_same_device); P(remote_transport);
  P(proxy_state); P(ibgda_state); P(cxi_state); P(error_host); P(coll_ll_bytes); P(reserved);
  printf("sizeof %zu\nteam %zu\nstateversion %u\ncontrol %u\nlloff %u\nllslot %u\n", sizeof(goshmemi_device_state_t),
         sizeof(goshmemi_team_t), GOSHMEMI_DEVICE_STATE_VERSION, (unsigned)GOSHMEMI_DEVICE_CONTROL_BYTES,
         (unsigned)GOSHMEMI_COLL_LL_OFF, (unsigned)GOSHMEMI_COLL_LL_SLOT_BYTES);
  printf("streamsyncoff %u\nstreamsyncrounds %u\nstreamsyncflat %u\npsyncslot %u\n", (unsigned)GOSHMEMI_STREAM_SYNC_OFF,
         (unsigned)GOSHMEMI_STREAM_SYNC_ROUNDS, (unsigned)GOSHMEMI_STREAM_SYNC_FLAT_MAX, (unsigned)GOSHMEMI_PSYNC_SLOT_BYTES);
  return 0;
}`
	got := map[string]int{}
	for k, v := range testutil.CValues(t, src) {
		got[k] = int(v)
	}
	want := map[string]int{
		"version": offVersion, "size": offSize, "my_pe": offMyPE, "n_pes": offNPEs, "heap_size": offHeapSize,
		"heap_base": offHeapBase, "team_epoch": offTeamEpoch, "teams": offTeams, "error_code": offErrorCode,
		"error_info": offErrorInfo, "all_peers_same_device": offAllSameDev, "remote_transport": offRemote,
		"proxy_state": offProxyState, "ibgda_state": offIBGDAState, "cxi_state": offCXIState, "error_host": offErrorHost, "coll_ll_bytes": offCollLL, "reserved": offReserved,
		"sizeof": StateSize, "team": teamSize, "stateversion": StateVersion, "control": ControlBytes,
		"lloff": collLLOff, "llslot": collLLSlot, "streamsyncoff": StreamSyncOff, "streamsyncrounds": StreamSyncRounds,
		"streamsyncflat": StreamSyncFlatMax,
		"psyncslot":      psyncRounds * psyncLine,
	}
	for k, v := range want {
		n, ok := got[k]
		if assert.True(t, ok, "gcc printed no %s", k) {
			assert.Equal(t, v, n, "%s: Go mirror vs device_state.h", k)
		}
	}

	// And the encoder writes the fields where C reads them.
	s := State{MyPE: 3, NPEs: 4, HeapSize: 1 << 30, AllPeersSameDevice: true, RemoteTransport: RemoteProxy,
		ProxyState: 0x1000, IBGDAState: 0x2000, CXIState: 0x3000, ErrorHost: 0x4000, CollLLBytes: 2048}
	s.HeapBase[2] = 0xdead0000
	s.Teams[1] = Team{Start: 1, Stride: 2, Size: 2, MyIndex: 1, Slot: 1}
	b := s.Bytes()
	require.Len(t, b, StateSize)
	le := binary.LittleEndian
	assert.EqualValues(t, StateVersion, le.Uint32(b[offVersion:]))
	assert.EqualValues(t, 3, le.Uint32(b[offMyPE:]))
	assert.EqualValues(t, 0xdead0000, le.Uint64(b[offHeapBase+16:]))
	assert.EqualValues(t, 2, le.Uint32(b[offTeams+teamSize+4:]))
	assert.EqualValues(t, 1, le.Uint32(b[offAllSameDev:]))
	assert.EqualValues(t, RemoteProxy, le.Uint32(b[offRemote:]))
	assert.EqualValues(t, 0x1000, le.Uint64(b[offProxyState:]))
	assert.EqualValues(t, 0x2000, le.Uint64(b[offIBGDAState:]))
	assert.EqualValues(t, 0x3000, le.Uint64(b[offCXIState:]))
	assert.EqualValues(t, 0x4000, le.Uint64(b[offErrorHost:]))
	assert.EqualValues(t, 2048, le.Uint32(b[offCollLL:]))
}
