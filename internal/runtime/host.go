package runtime

import (
	"fmt"
	"sort"
	"time"
	"unsafe"

	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/quiet"
	"github.com/goshmem/goshmem/internal/transport"
	"github.com/goshmem/goshmem/internal/transport/ofi"
	"github.com/goshmem/goshmem/internal/transport/shm"
)

// shmBackend is the host transport between the PEs of one node: loads,
// stores and atomics on the mapped regions. Every PE starts on it; the ofi
// backend then takes the peers it carries.
type shmBackend struct{ r *Runtime }

func (b *shmBackend) Name() string { return "shm" }

// DecidesFromAgreedState: shm's choices depend on the agreed settings and
// the node map alone.
func (b *shmBackend) DecidesFromAgreedState() {}

// Setup checks GOSHMEM_TRANSPORT and points every peer at shm.
func (b *shmBackend) Setup() ([]byte, error) {
	r := b.r
	want := r.Settings.String("GOSHMEM_TRANSPORT")
	switch want {
	case "auto", "shm", "ofi":
	default:
		return nil, errs.Hint(errs.ErrNotSupported, "use GOSHMEM_TRANSPORT=auto, shm or ofi",
			r.Me, "Init", "GOSHMEM_TRANSPORT=%q is not a transport", want)
	}
	r.shm = shm.New(r.heap.bases)
	r.firstQ = quiet.NewQueue("default context", nil)
	r.Tr = make([]transport.Transport, r.NPEs)
	for pe := range r.Tr {
		if r.heap.bases[pe] == nil && want == "shm" {
			return nil, errs.Hint(errs.ErrNotSupported, "use GOSHMEM_TRANSPORT=auto (ofi across nodes) or run every PE on one node",
				r.Me, "Init", "PE %d is on another node (node %d, this PE is on node %d) and GOSHMEM_TRANSPORT=shm",
				pe, r.Node[pe], r.Node[r.Me])
		}
		r.Tr[pe] = r.shm
	}
	return nil, nil
}

func (b *shmBackend) Connect(int, [][]byte) ([]byte, bool, error) { return nil, true, nil }
func (b *shmBackend) Drain(string, time.Duration) error           { return nil }
func (b *shmBackend) Diagnose() string                            { return "" }

// Info names the transport chosen per peer (like NVSHMEM's can_reach_peer).
func (b *shmBackend) Info() []string {
	r := b.r
	byName := map[string][]int{}
	for pe, t := range r.Tr {
		byName[t.Name()] = append(byName[t.Name()], pe)
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []string
	for _, n := range names {
		out = append(out, fmt.Sprintf("PE %d (node %d): transport %s to PEs %v", r.Me, r.Node[r.Me], n, byName[n]))
	}
	return out
}

func (b *shmBackend) Close() error { return nil }

// ofiBackend is the host transport over libfabric: every peer on another
// node, or every peer with GOSHMEM_TRANSPORT=ofi (how the ofi path is
// tested on one machine). Every PE decides the same way from the agreed
// settings and the node map.
type ofiBackend struct {
	r   *Runtime
	t   *ofi.Transport
	all bool // GOSHMEM_TRANSPORT=ofi
}

// newOFIBackend is the ofi backend when some peer needs it, else nil.
func (r *Runtime) newOFIBackend() Backend {
	all := r.Settings.String("GOSHMEM_TRANSPORT") == "ofi"
	need := all
	for pe := 0; pe < r.NPEs; pe++ {
		if r.heap.bases[pe] == nil {
			need = true
		}
	}
	if !need {
		return nil
	}
	return &ofiBackend{r: r, all: all}
}

func (b *ofiBackend) Name() string { return "ofi" }

func (b *ofiBackend) carries(pe int) bool {
	return pe != b.r.Me && (b.all || b.r.heap.bases[pe] == nil)
}

// Setup opens the provider and registers this PE's region.
func (b *ofiBackend) Setup() ([]byte, error) {
	r := b.r
	own := r.heap.regions[r.Me].Bytes()
	reach := make([]bool, r.NPEs)
	for pe := range reach {
		reach[pe] = b.carries(pe)
	}
	t, rec, err := ofi.Setup(ofi.Config{
		Reach:     reach,
		Provider:  r.Settings.String("GOSHMEM_OFI_PROVIDER"),
		Iface:     r.Settings.String("GOSHMEM_OFI_IFACE"),
		OneNode:   oneNode(r.Node),
		Me:        r.Me,
		NPEs:      r.NPEs,
		Region:    unsafe.Pointer(unsafe.SliceData(own)),
		RegionLen: uint64(len(own)),
		Local:     r.heap.bases,
		Timeout:   r.Policy.Timeout,
		Check:     r.CheckPeers,
	})
	if err != nil {
		return nil, err // ofi's errors name the PE, Init and ofi
	}
	b.t = t
	return rec, nil
}

// Connect inserts every PE's address and checks that each peer it
// carries answers a read.
func (b *ofiBackend) Connect(_ int, recs [][]byte) ([]byte, bool, error) {
	if err := b.t.Connect(recs); err != nil {
		return nil, false, err
	}
	r := b.r
	q, err := b.t.NewQueue("default context")
	if err != nil {
		return nil, false, err
	}
	r.ofi, r.firstQ = b.t, q
	for pe := range r.Tr {
		if pe == r.Me && b.all || b.carries(pe) {
			r.Tr[pe] = b.t
		}
	}
	return nil, true, nil
}

func (b *ofiBackend) Drain(string, time.Duration) error { return nil }
func (b *ofiBackend) Diagnose() string                  { return "" }

func (b *ofiBackend) Info() []string {
	if b.r.Me != 0 {
		return nil
	}
	return []string{b.t.Describe()}
}

// Close releases the endpoint (before the heap it registered is unmapped:
// the runtime closes backends in reverse order).
func (b *ofiBackend) Close() error {
	b.r.ofi = nil
	if b.t == nil {
		return nil
	}
	return b.t.Close()
}

// oneNode reports whether every PE runs on one node (a loopback address
// then serves ofi).
func oneNode(nodes []int) bool {
	for _, n := range nodes {
		if n != nodes[0] {
			return false
		}
	}
	return true
}
