package cxi

import (
	"sync/atomic"
	"unsafe"
)

// Go mirror of include/goshmem/cxi.h. layout_test.go compiles the header
// with gcc and checks every offset and size below against it.
// Ref: include/goshmem/cxi.h.
const (
	MaxRounds = 32 // GOSHMEMI_CXI_MAX_ROUNDS
	Slots     = 2  // GOSHMEMI_CXI_SLOTS
	AMArgs    = 5  // GOSHMEMI_CXI_AM_ARGS

	slotSize    = 64 // goshmemi_cxi_slot_t
	slotArmed   = 0
	slotDoorbel = 8
	slotMMIO    = 16

	msgSize    = 64 // goshmemx_cxi_msg_t
	msgSeq     = 0
	msgHandler = 8
	msgSrcPE   = 12
	msgFlags   = 16
	msgNArgs   = 20
	msgArgs    = 24

	offVersion   = 0
	offSize      = 4
	offRank      = 8
	offNRanks    = 12
	offRounds    = 16
	offFlags     = 20
	offStop      = 24
	offHeartbeat = 32
	offTimeout   = 40
	offError     = 48
	offBarInst   = 56
	offReadyStal = 64
	offAMOff     = 72
	offScratch   = 80 // scratch_[2]
	offBenchDB   = 96
	offBarSlot   = 128
	offSig       = offBarSlot + Slots*slotSize
	offSrc       = offSig + Slots*MaxRounds*8
	StateSize    = offSrc + Slots*MaxRounds*8 // 1280
	StateVersion = 2<<16 + StateSize

	// goshmemi_cxi_am_peer_t
	amSlot     = 0
	amSend     = Slots * slotSize
	amSeqSrc   = amSend + Slots*msgSize
	amCredit   = amSeqSrc + Slots*8
	amConsumed = amCredit + 8
	amSent     = amConsumed + 8
	amCredSent = amSent + 8
	amMbox     = amCredSent + 8 + 16
	amPeerSize = amMbox + Slots*msgSize // 448

	flagMMIO = 1      // GOSHMEMI_CXI_FLAG_MMIO
	dbMMIO   = 0x8000 // GOSHMEMI_CXI_DB_MMIO
)

// regionSize is the bytes of one rank's shared region: the state, then
// (with active messages) one goshmemi_cxi_am_peer_t per rank.
func regionSize(nranks int, am bool) int {
	n := StateSize
	if am {
		n += nranks * amPeerSize
	}
	return (n + 4095) &^ 4095
}

// word is a 64-bit word of the region, accessed atomically (the GPU and
// the monitor share it; the host side uses Go's sequentially consistent
// atomics, which are at least release/acquire).
func word(base unsafe.Pointer, off uintptr) *atomic.Uint64 {
	return (*atomic.Uint64)(unsafe.Add(base, off))
}

func word32(base unsafe.Pointer, off uintptr) *atomic.Uint32 {
	return (*atomic.Uint32)(unsafe.Add(base, off))
}

func barSlotOff(s int) uintptr    { return offBarSlot + uintptr(s)*slotSize }
func sigOff(s, r int) uintptr     { return offSig + uintptr(s*MaxRounds+r)*8 }
func srcOff(s, r int) uintptr     { return offSrc + uintptr(s*MaxRounds+r)*8 }
func amPeerOff(pe int) uintptr    { return StateSize + uintptr(pe)*amPeerSize }
func amSlotOff(pe, s int) uintptr { return amPeerOff(pe) + amSlot + uintptr(s)*slotSize }
func amSendOff(pe, s int) uintptr { return amPeerOff(pe) + amSend + uintptr(s)*msgSize }
func amMboxOff(pe, s int) uintptr { return amPeerOff(pe) + amMbox + uintptr(s)*msgSize }
func amSeqSrcOff(pe, s int) uintptr {
	return amPeerOff(pe) + amSeqSrc + uintptr(s)*8
}
