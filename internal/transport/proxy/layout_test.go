package proxy

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/goshmem/goshmem/internal/testutil"
)

// TestLayoutMatchesHeader compiles include/goshmem/proxy.h with gcc and
// compares offsets, sizes and constants with the Go mirror, and encodes a
// descriptor with the header's encoder to decode it here.
func TestLayoutMatchesHeader(t *testing.T) {
	src := `#include <stdio.h>
#include <stddef.h>
#include <goshmem.h>
#define S(t, f) printf(#t "." #f " %zu\n", offsetof(t, f))
int main(void) {
  S(goshmemi_proxy_state_t, version); S(goshmemi_proxy_state_t, size); S(goshmemi_proxy_state_t, nrings);
  S(goshmemi_proxy_state_t, nctx); S(goshmemi_proxy_state_t, status); S(goshmemi_proxy_state_t, timeout_ns);
  S(goshmemi_proxy_state_t, ctx_first); S(goshmemi_proxy_state_t, ctx_count); S(goshmemi_proxy_state_t, rings);
  S(goshmemi_proxy_state_t, regs); S(goshmemi_proxy_regs_t, n); S(goshmemi_proxy_regs_t, reg);
  S(goshmemi_proxy_reg_t, base); S(goshmemi_proxy_reg_t, end);
  S(goshmemi_proxy_ring_t, slots); S(goshmemi_proxy_ring_t, replies); S(goshmemi_proxy_ring_t, tail);
  S(goshmemi_proxy_ring_t, log2_slots); S(goshmemi_proxy_ring_t, mode); S(goshmemi_proxy_ring_t, ctx);
  S(goshmemi_proxy_ring_t, worker); S(goshmemi_proxy_ring_t, head); S(goshmemi_proxy_ring_t, cached_tail);
  S(goshmemi_proxy_ring_t, done); S(goshmemi_proxy_reply_t, value); S(goshmemi_proxy_reply_t, ticket);
  S(goshmemi_proxy_reply_t, ack); S(goshmemi_proxy_status_t, dead); S(goshmemi_proxy_status_t, dead_info);
  S(goshmemi_proxy_status_t, ring_err);
  printf("sizeof.state %zu\nsizeof.ring %zu\nsizeof.reply %zu\nsizeof.status %zu\nversion %u\n",
         sizeof(goshmemi_proxy_state_t), sizeof(goshmemi_proxy_ring_t), sizeof(goshmemi_proxy_reply_t),
         sizeof(goshmemi_proxy_status_t), GOSHMEMI_PROXY_STATE_VERSION);
  printf("chunk %llu\nmaxrings %d\nmaxctx %d\nmaxregs %d\n", (unsigned long long)GOSHMEMI_PROXY_CHUNK, GOSHMEMI_PROXY_MAX_RINGS,
         GOSHMEMI_PROXY_MAX_CTX, GOSHMEMI_PROXY_MAX_REGS);
  printf("sizeof.regs %zu\nsizeof.reg %zu\n", sizeof(goshmemi_proxy_regs_t), sizeof(goshmemi_proxy_reg_t));
  printf("w0 %llu\nw1 %llu\n", (unsigned long long)goshmemi_proxy_w0(GOSHMEMI_PROXY_OP_AMO, 77, 0x3b, 0x123456789aull),
         (unsigned long long)goshmemi_proxy_w1_span(0xabcdef0123ull, 4097));
  return 0;
}`
	got := testutil.CValues(t, src)
	want := map[string]uint64{
		"goshmemi_proxy_state_t.version": offVersion, "goshmemi_proxy_state_t.size": offSize,
		"goshmemi_proxy_state_t.nrings": offNRings, "goshmemi_proxy_state_t.nctx": offNCtx,
		"goshmemi_proxy_state_t.status": offStatus, "goshmemi_proxy_state_t.timeout_ns": offTimeout,
		"goshmemi_proxy_state_t.ctx_first": offCtxFirst, "goshmemi_proxy_state_t.ctx_count": offCtxCount,
		"goshmemi_proxy_state_t.rings": offRings, "goshmemi_proxy_state_t.regs": offRegs,
		"goshmemi_proxy_regs_t.n": regsOffN, "goshmemi_proxy_regs_t.reg": regsOffReg,
		"goshmemi_proxy_reg_t.base": regOffBase, "goshmemi_proxy_reg_t.end": regOffEnd,
		"sizeof.regs": regsSize, "sizeof.reg": regSize, "maxregs": MaxRegs,
		"goshmemi_proxy_ring_t.slots": ringOffSlots, "goshmemi_proxy_ring_t.replies": ringOffReplies,
		"goshmemi_proxy_ring_t.tail": ringOffTail, "goshmemi_proxy_ring_t.log2_slots": ringOffLog2,
		"goshmemi_proxy_ring_t.mode": ringOffMode, "goshmemi_proxy_ring_t.ctx": ringOffCtx,
		"goshmemi_proxy_ring_t.worker": ringOffWorker, "goshmemi_proxy_ring_t.head": ringOffHead,
		"goshmemi_proxy_ring_t.cached_tail": ringOffCachedTail, "goshmemi_proxy_ring_t.done": ringOffDone,
		"goshmemi_proxy_reply_t.value": replyOffValue, "goshmemi_proxy_reply_t.ticket": replyOffTicket,
		"goshmemi_proxy_reply_t.ack": replyOffAck, "goshmemi_proxy_status_t.dead": statusOffDead,
		"goshmemi_proxy_status_t.dead_info": statusOffDeadInfo, "goshmemi_proxy_status_t.ring_err": statusOffRingErr,
		"sizeof.state": StateSize, "sizeof.ring": ringSize, "sizeof.reply": replySize, "sizeof.status": statusSize,
		"version": StateVersion, "chunk": Chunk, "maxrings": MaxRings, "maxctx": MaxCtx,
	}
	for k, v := range want {
		assert.Equal(t, v, got[k], k)
	}
	d := Decode(got["w0"]|1, got["w1"])
	assert.Equal(t, Desc{Phase: 1, Op: OpAMO, PE: 77, Arg: 0x3b, ROff: 0x123456789a, W1: got["w1"]}, d)
	assert.Equal(t, got["w0"], Encode(OpAMO, 77, 0x3b, 0x123456789a))
	assert.Equal(t, uint64(0xabcdef0123), Decode(0, got["w1"]).LOff())
	assert.Equal(t, got["w1"], Span(0xabcdef0123, 4097))
	assert.Equal(t, uint64(2), d.Slots(), "ext bit")
	assert.True(t, d.WantsReply())
	assert.Equal(t, uint64(8), d.Size())
	assert.Zero(t, d.Reg(), "an AMO names no registered buffer")
	put := Decode(Encode(OpPut, 3, 7, 0x40)|1, Span(0x10, 64))
	assert.Equal(t, 7, put.Reg(), "a PUT's arg: registered slot + 1")
}

func TestParseCPUList(t *testing.T) {
	assert.Equal(t, []int{0, 1, 2, 3, 8, 10, 11}, ParseCPUList("0-3,8,10-11"))
	assert.Equal(t, []int{5}, ParseCPUList("x,5,3-1"))
	assert.Empty(t, ParseCPUList(""))
}
