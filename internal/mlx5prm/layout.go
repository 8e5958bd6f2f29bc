package mlx5prm

import (
	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Queue geometry of a block of GPU memory holding the rings of n QPs, one
// devx umem for all of them: per QP a page-aligned SQ ring (WQEBBs x 64 B)
// and a page-aligned CQ ring (CQEs x 64 B), then one region of doorbell
// records, 64 bytes per QP (the QP's 8-byte record [receive, send] at +0,
// the CQ's [consumer index, arm] at +32). The block size is a multiple of
// BlockAlign, the granularity the dma-buf export and the GPU allocator
// need.
const (
	WQEBB      = 64
	CQEBytes   = 64
	UmemPage   = 1 << AdapterPageShift // the umem page size goshmem asks for (log_page_size 0)
	BlockAlign = 64 << 10              // GPU page
	dbrStride  = 64
	cqDBROff   = 32
)

// Rings are the byte offsets of one QP's queues in the block.
type Rings struct {
	SQ, CQ, DBR, CQDBR uint64
}

// Block is the layout of n QPs' queues.
type Block struct {
	Size     uint64 // bytes, a multiple of BlockAlign
	SQWQEBBs uint32
	CQEs     uint32
	QPs      []Rings
}

// Layout places n QPs of sqWQEBBs WQEBBs and cqes CQEs (powers of two;
// the SQ at most 32768 WQEBBs, the device header's 16-bit index) in one
// block.
func Layout(n int, sqWQEBBs, cqes uint32) (Block, error) {
	switch {
	case n <= 0:
		return Block{}, errors.Wrapf(errs.ErrInvalidArgument, "mlx5prm: %d QPs, want > 0", n)
	case Log2(sqWQEBBs) < 0 || sqWQEBBs > 32768:
		return Block{}, errors.Wrapf(errs.ErrInvalidArgument, "mlx5prm: SQ of %d WQEBBs, want a power of two in [1, 32768]", sqWQEBBs)
	case Log2(cqes) < 0 || cqes > 1<<22:
		return Block{}, errors.Wrapf(errs.ErrInvalidArgument, "mlx5prm: CQ of %d CQEs, want a power of two in [1, 4194304]", cqes)
	}
	up := func(x, a uint64) uint64 { return (x + a - 1) &^ (a - 1) }
	b := Block{SQWQEBBs: sqWQEBBs, CQEs: cqes, QPs: make([]Rings, n)}
	off := uint64(0)
	for i := range b.QPs {
		b.QPs[i].SQ = off
		off = up(off+uint64(sqWQEBBs)*WQEBB, UmemPage)
		b.QPs[i].CQ = off
		off = up(off+uint64(cqes)*CQEBytes, UmemPage)
	}
	for i := range b.QPs {
		b.QPs[i].DBR = off + uint64(i)*dbrStride
		b.QPs[i].CQDBR = b.QPs[i].DBR + cqDBROff
	}
	b.Size = up(off+uint64(n)*dbrStride, BlockAlign)
	return b, nil
}

// CQEInvalid is the op_own byte of a CQE the NIC has not written yet
// (opcode MLX5_CQE_INVALID = 0xf, owner 0), as rdma-core initializes a CQ
// ring. Ref: rdma-core providers/mlx5 mlx5_alloc_cq_buf.
const CQEInvalid = 0xf0

// CQEOpOwn is the offset of op_own in a 64-byte CQE. Ref: mlx5dv.h
// struct mlx5_cqe64 (op_own is its last byte).
const CQEOpOwn = 63

// Image is the block's initial content: zero rings and records, every CQE
// marked invalid.
func (b Block) Image() []byte {
	img := make([]byte, b.Size)
	for _, r := range b.QPs {
		for i := uint64(0); i < uint64(b.CQEs); i++ {
			img[r.CQ+i*CQEBytes+CQEOpOwn] = CQEInvalid
		}
	}
	return img
}
