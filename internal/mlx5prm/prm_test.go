package mlx5prm

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/goshmem/goshmem/internal/errs"
)

// Set follows the PRM bit numbering: bit 0 is the most significant bit of
// the first big-endian word; a field ends at the low end of its bits.
func TestSetBitNumbering(t *testing.T) {
	b := make([]byte, 16)
	Set(b, 0, 16, 0x0400) // an opcode: bytes 0-1
	assert.Equal(t, []byte{0x04, 0x00, 0, 0}, b[:4])
	Set(b, 0x48, 24, 0xabcdef) // a qpn: bits 0x48..0x5f = bytes 9-11
	assert.Equal(t, []byte{0, 0xab, 0xcd, 0xef}, b[8:12])
	b = make([]byte, 8)
	Set(b, 0x06, 1, 1) // one bit: bit 6 of byte 0 from the top = 0x02
	assert.Equal(t, byte(0x02), b[0])
	Set(b, 0x08, 3, 7) // 3 bits at the top of byte 1
	assert.Equal(t, byte(0xe0), b[1])
	Set(b, 0x08, 3, 0) // clearing leaves neighbours alone
	assert.Equal(t, []byte{0x02, 0, 0, 0}, b[:4])
	Set(b, 0x1b, 5, 0x3f) // a value wider than its field is cut to 5 bits
	assert.Equal(t, uint32(0x1f), binary.BigEndian.Uint32(b)&0x1f)
	assert.Equal(t, byte(0x02), b[0], "the value's extra bit must not spill")
	b = make([]byte, 16)
	Set(b, 0x40, 64, 0x0102030405060708)
	assert.Equal(t, []byte{1, 2, 3, 4, 5, 6, 7, 8}, b[8:16])
	assert.Equal(t, uint64(0x0102030405060708), Get(b, 0x40, 64))
	assert.Panics(t, func() { Set(b, 0x1c, 8, 1) }, "a field crossing a word")
	assert.Panics(t, func() { Set(b, 0x20, 64, 1) }, "an unaligned 64-bit field")
}

// bits reads a field of a mailbox by hand (independently of Get): the
// big-endian word holding it, shifted.
func bits(b []byte, off, width int) uint64 {
	w := binary.BigEndian.Uint32(b[off/32*4:])
	return uint64(w>>(32-off%32-width)) & (1<<width - 1)
}

func TestCreateCQ(t *testing.T) {
	b := CreateCQ(CQ{LogSize: 6, UARPage: 0x123456, EQN: 0x1ff, UmemID: 0xdeadbeef, UmemOffset: 0x11000,
		DBRUmemID: 0x77, DBROffset: 0x40a0, LogPageSize: 4})
	require.Len(t, b, 272)
	assert.Equal(t, []byte{0x04, 0x00}, b[0:2], "opcode CREATE_CQ")
	// cqc at byte 16
	assert.Equal(t, uint64(1), bits(b, 0x80+0x06, 1), "dbr_umem_valid")
	assert.Equal(t, byte(0x02), b[16], "dbr_umem_valid alone in byte 0 of the cqc")
	assert.Equal(t, byte(0x00), b[17], "cqe_sz 64 B, cc 0, oi 0")
	assert.Equal(t, []byte{0, 0, 0, 0x77}, b[20:24], "dbr_umem_id")
	assert.Equal(t, []byte{0x06, 0x12, 0x34, 0x56}, b[28:32], "log_cq_size | uar_page")
	assert.Equal(t, []byte{0, 0, 0x01, 0xff}, b[36:40], "c_eqn_or_apu_element")
	assert.Equal(t, byte(0x04), b[40], "log_page_size")
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 0, 0x40, 0xa0}, b[72:80], "dbr_addr (cqc bit 0x1c0)")
	assert.Equal(t, []byte{0, 0, 0, 0, 0, 1, 0x10, 0}, b[80:88], "cq_umem_offset (bit 0x280)")
	assert.Equal(t, []byte{0xde, 0xad, 0xbe, 0xef}, b[88:92], "cq_umem_id")
	assert.Equal(t, byte(0x80), b[92], "cq_umem_valid")
	for i, v := range b[93:] {
		assert.Zero(t, v, "byte %d after cq_umem_valid", 93+i)
	}
}

func TestCreateQP(t *testing.T) {
	b := CreateQP(QP{PD: 0xabcdef, UARPage: 0x000102, CQN: 0x000403, LogSQSize: 8, UmemID: 0x11223344,
		UmemOffset: 0x20000, DBRUmemID: 0x55667788, DBROffset: 0x8040, LogPageSize: 0})
	require.Len(t, b, 272)
	assert.Equal(t, []byte{0x05, 0x00}, b[0:2], "opcode CREATE_QP")
	q := 24 // qpc at bit 0xc0
	assert.Equal(t, byte(0x00), b[q+1], "st RC")
	assert.Equal(t, uint64(3), bits(b, 0xc0+0x13, 2), "pm_state migrated")
	assert.Equal(t, byte(0x18), b[q+2], "pm_state bits 0x13-0x14 of the word: byte 2 = 0b00011000")
	assert.Equal(t, []byte{0xab, 0xcd, 0xef}, b[q+5:q+8], "pd")
	assert.Equal(t, byte(0x08<<3), b[q+10]&0x78, "log_sq_size in bits 0x51-0x54")
	assert.Equal(t, uint64(8), bits(b, 0xc0+0x51, 4))
	assert.Equal(t, uint64(0), bits(b, 0xc0+0x50, 1), "no_sq")
	assert.Equal(t, []byte{0x00, 0x01, 0x02}, b[q+13:q+16], "uar_page")
	assert.Equal(t, []byte{0x00, 0x04, 0x03}, b[q+0x3e8/8:q+0x3e8/8+3], "cqn_snd")
	assert.Equal(t, []byte{0x00, 0x04, 0x03}, b[q+0x4e8/8:q+0x4e8/8+3], "cqn_rcv")
	assert.Equal(t, uint64(0x8040), binary.BigEndian.Uint64(b[q+0x500/8:]), "dbr_addr")
	assert.Equal(t, uint64(3), bits(b, 0xc0+0x565, 3), "rq_type zero-size")
	assert.Equal(t, uint64(1), bits(b, 0xc0+0x683, 1), "dbr_umem_valid")
	assert.Equal(t, []byte{0x55, 0x66, 0x77, 0x88}, b[q+0x720/8:q+0x720/8+4], "dbr_umem_id")
	assert.Equal(t, 0x100, 0xc0/8+0x740/8, "the qpc (0x740 bits) ends at byte 256")
	assert.Equal(t, uint64(0x20000), binary.BigEndian.Uint64(b[256:]), "wq_umem_offset")
	assert.Equal(t, []byte{0x11, 0x22, 0x33, 0x44}, b[264:268], "wq_umem_id")
	assert.Equal(t, byte(0x80), b[268], "wq_umem_valid")
}

func TestModifyQP(t *testing.T) {
	b := RST2INIT(0x00abcd, 1)
	require.Len(t, b, 272)
	assert.Equal(t, []byte{0x05, 0x02}, b[0:2])
	assert.Equal(t, []byte{0x00, 0x00, 0xab, 0xcd}, b[8:12], "qpn")
	assert.Equal(t, []byte{0, 0, 0, 0}, b[16:20], "opt_param_mask")
	q := 24
	assert.Equal(t, uint64(1), bits(b, 0xc0+0x48c, 4), "atomic_mode IB-compatible")
	assert.Equal(t, byte(0x01), b[q+0x488/8]&0x0f, "atomic_mode in the low nibble of its byte")
	assert.Equal(t, byte(0xe0), b[q+0x490/8], "rre rwe rae")
	assert.Equal(t, byte(1), b[q+(0xc0+0x128)/8], "vhca_port_num in the primary path")

	ib := INIT2RTR(0x12, RTR{MTU: 5, RemoteQPN: 0x345678, RcvPSN: 0, LogRRAMax: 4, MinRNRNak: 12, LogMsgMax: 30,
		Path: Path{Port: 1, RLID: 0xbeef, SL: 3}})
	assert.Equal(t, []byte{0x05, 0x03}, ib[0:2])
	assert.Equal(t, byte(5<<5|30), ib[q+8], "mtu | log_msg_max")
	assert.Equal(t, []byte{0x34, 0x56, 0x78}, ib[q+0xa8/8:q+0xa8/8+3], "remote_qpn")
	assert.Equal(t, uint64(4), bits(ib, 0xc0+0x488, 3), "log_rra_max")
	assert.Equal(t, byte(12), ib[q+0x4a0/8], "min_rnr_nak")
	p := q + 0xc0/8 // the path at qpc bit 0xc0
	assert.Equal(t, []byte{0xbe, 0xef}, ib[p+6:p+8], "rlid")
	assert.Equal(t, byte(0), ib[p+5]&0x80, "grh off on InfiniBand")
	assert.Equal(t, byte(3), ib[p+0x24]&0x0f, "sl")
	assert.Equal(t, byte(1), ib[p+0x25], "vhca_port_num")

	mac := [6]byte{0x0c, 0x42, 0xa1, 0x01, 0x02, 0x03}
	var gid [16]byte
	for i := range gid {
		gid[i] = byte(0xf0 + i)
	}
	eb := INIT2RTR(0x12, RTR{MTU: 3, RemoteQPN: 1, Path: Path{Port: 2, Eth: true, RGID: gid, SGIDIndex: 3,
		HopLimit: 64, RMAC: mac, UDPSport: 0xc001}})
	assert.Equal(t, gid[:], eb[p+16:p+32], "rgid_rip")
	assert.Equal(t, byte(3), eb[p+9], "src_addr_index")
	assert.Equal(t, byte(64), eb[p+11], "hop_limit")
	assert.Equal(t, []byte{0xc0, 0x01}, eb[p+0x22:p+0x24], "udp_sport")
	assert.Equal(t, mac[:], eb[p+0x26:p+0x2c], "rmac_47_32 then rmac_31_0")
	assert.Equal(t, []byte{0, 0}, eb[p+6:p+8], "no rlid on RoCE")

	rb := RTR2RTS(0x12, RTS{SendPSN: 0x000102, LogSRAMax: 4, Retry: 7, RNRRetry: 7, AckTimeout: 14})
	assert.Equal(t, []byte{0x05, 0x04}, rb[0:2])
	assert.Equal(t, []byte{0x00, 0x01, 0x02}, rb[q+0x3c8/8:q+0x3c8/8+3], "next_send_psn")
	assert.Equal(t, uint64(4), bits(rb, 0xc0+0x388, 3), "log_sra_max")
	assert.Equal(t, uint64(7), bits(rb, 0xc0+0x38d, 3), "retry_count")
	assert.Equal(t, uint64(7), bits(rb, 0xc0+0x390, 3), "rnr_retry")
	assert.Equal(t, byte(14<<3), rb[p+8], "ack_timeout in the top 5 bits")
}

func TestDecodeOut(t *testing.T) {
	out := make([]byte, CreateOutBytes)
	out[0] = 0x03
	binary.BigEndian.PutUint32(out[4:], 0x1234abcd)
	binary.BigEndian.PutUint32(out[8:], 0xff00beef) // the top byte is reserved
	o := Decode(out)
	assert.Equal(t, Out{Status: 3, Syndrome: 0x1234abcd}, o)
	assert.Equal(t, "status 0x3 (BAD_PARAM), syndrome 0x1234abcd", o.String())
	assert.Equal(t, uint32(0x00beef), ObjNum(out))
	assert.Contains(t, Out{Status: 0x77}.String(), "unknown")
}

func TestLayout(t *testing.T) {
	b, err := Layout(3, 256, 64)
	require.NoError(t, err)
	assert.Equal(t, []Rings{
		{SQ: 0x0000, CQ: 0x4000, DBR: 0xf000, CQDBR: 0xf020},
		{SQ: 0x5000, CQ: 0x9000, DBR: 0xf040, CQDBR: 0xf060},
		{SQ: 0xa000, CQ: 0xe000, DBR: 0xf080, CQDBR: 0xf0a0},
	}, b.QPs)
	assert.Equal(t, uint64(64<<10), b.Size)
	img := b.Image()
	require.Len(t, img, 64<<10)
	for _, r := range b.QPs {
		assert.Equal(t, byte(0xf0), img[r.CQ+63], "first CQE invalid")
		assert.Equal(t, byte(0xf0), img[r.CQ+63*64+63], "last CQE invalid")
		assert.Equal(t, byte(0), img[r.CQ+62])
		assert.Equal(t, byte(0), img[r.SQ+63])
	}
	b, err = Layout(100, 1024, 256)
	require.NoError(t, err)
	assert.Zero(t, b.Size%BlockAlign)
	last := b.QPs[99]
	assert.LessOrEqual(t, last.CQDBR+8, b.Size)
	for _, bad := range []struct {
		n       int
		sq, cqe uint32
		msg     string
	}{{0, 256, 64, "0 QPs"}, {1, 100, 64, "SQ of 100 WQEBBs"}, {1, 65536, 64, "SQ of 65536"}, {1, 256, 0, "CQ of 0 CQEs"}} {
		_, err := Layout(bad.n, bad.sq, bad.cqe)
		require.ErrorIs(t, err, errs.ErrInvalidArgument)
		assert.Contains(t, err.Error(), bad.msg)
	}
}

func TestLog2(t *testing.T) {
	assert.Equal(t, 0, Log2(1))
	assert.Equal(t, 8, Log2(256))
	assert.Equal(t, -1, Log2(0))
	assert.Equal(t, -1, Log2(96))
	assert.Equal(t, uint8(4), FloorLog2(16))
	assert.Equal(t, uint8(4), FloorLog2(31))
	assert.Equal(t, uint8(0), FloorLog2(1))
	assert.Equal(t, uint8(0), FloorLog2(0))
}
