package cxi

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/testutil"
)

// TestLayoutMatchesHeader compiles include/goshmem/cxi.h with gcc and
// compares each offsetof/sizeof with layout.go.
func TestLayoutMatchesHeader(t *testing.T) {
	checks := map[string]int{
		"sizeof(goshmemi_cxi_state_t)":                      StateSize,
		"GOSHMEMI_CXI_STATE_VERSION":                        StateVersion,
		"sizeof(goshmemi_cxi_slot_t)":                       slotSize,
		"offsetof(goshmemi_cxi_slot_t, doorbell)":           slotDoorbel,
		"offsetof(goshmemi_cxi_slot_t, mmio)":               slotMMIO,
		"sizeof(goshmemx_cxi_msg_t)":                        msgSize,
		"offsetof(goshmemx_cxi_msg_t, handler)":             msgHandler,
		"offsetof(goshmemx_cxi_msg_t, src_pe)":              msgSrcPE,
		"offsetof(goshmemx_cxi_msg_t, flags)":               msgFlags,
		"offsetof(goshmemx_cxi_msg_t, nargs)":               msgNArgs,
		"offsetof(goshmemx_cxi_msg_t, args)":                msgArgs,
		"offsetof(goshmemi_cxi_state_t, rank)":              offRank,
		"offsetof(goshmemi_cxi_state_t, nranks)":            offNRanks,
		"offsetof(goshmemi_cxi_state_t, rounds)":            offRounds,
		"offsetof(goshmemi_cxi_state_t, flags)":             offFlags,
		"offsetof(goshmemi_cxi_state_t, stop)":              offStop,
		"offsetof(goshmemi_cxi_state_t, heartbeat)":         offHeartbeat,
		"offsetof(goshmemi_cxi_state_t, timeout_ns)":        offTimeout,
		"offsetof(goshmemi_cxi_state_t, error)":             offError,
		"offsetof(goshmemi_cxi_state_t, barrier_instance)":  offBarInst,
		"offsetof(goshmemi_cxi_state_t, ready_stalls)":      offReadyStal,
		"offsetof(goshmemi_cxi_state_t, am_off)":            offAMOff,
		"offsetof(goshmemi_cxi_state_t, scratch_)":          offScratch,
		"offsetof(goshmemi_cxi_state_t, bench_doorbell)":    offBenchDB,
		"offsetof(goshmemi_cxi_state_t, barrier_slot)":      offBarSlot,
		"offsetof(goshmemi_cxi_state_t, sig)":               offSig,
		"offsetof(goshmemi_cxi_state_t, src)":               offSrc,
		"sizeof(goshmemi_cxi_am_peer_t)":                    amPeerSize,
		"offsetof(goshmemi_cxi_am_peer_t, send)":            amSend,
		"offsetof(goshmemi_cxi_am_peer_t, seqsrc)":          amSeqSrc,
		"offsetof(goshmemi_cxi_am_peer_t, credit)":          amCredit,
		"offsetof(goshmemi_cxi_am_peer_t, consumed)":        amConsumed,
		"offsetof(goshmemi_cxi_am_peer_t, sent)":            amSent,
		"offsetof(goshmemi_cxi_am_peer_t, credit_sent)":     amCredSent,
		"offsetof(goshmemi_cxi_am_peer_t, mbox)":            amMbox,
		"GOSHMEMI_CXI_MAX_ROUNDS":                           MaxRounds,
		"GOSHMEMI_CXI_AM_ARGS":                              AMArgs,
		"GOSHMEMI_CXI_FLAG_MMIO":                            flagMMIO,
		"GOSHMEMI_CXI_DB_MMIO":                              dbMMIO,
		"offsetof(goshmemi_device_state_t, cxi_state) != 0": 1,
	}
	var src strings.Builder
	src.WriteString("#include <goshmem.h>\n#include <stdio.h>\n#include <stddef.h>\nint main(void) {\n")
	keys := make([]string, 0, len(checks))
	for k := range checks {
		keys = append(keys, k)
		src.WriteString("printf(\"%llu\\n\", (unsigned long long)(" + k + "));\n")
	}
	src.WriteString("return 0; }\n")
	lines := strings.Fields(testutil.RunC(t, src.String()))
	require.Len(t, lines, len(keys))
	for i, k := range keys {
		v, err := strconv.Atoi(lines[i])
		require.NoError(t, err)
		if v != checks[k] {
			t.Errorf("%s: header says %d, layout.go says %d", k, v, checks[k])
		}
	}
}
