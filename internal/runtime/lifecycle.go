package runtime

import (
	"encoding/binary"
	"fmt"
	"strings"
	"time"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/errs"
)

// Backend is one host transport or GPU backend in the runtime's lifecycle
// (the shape of NVSHMEM's transport host-ops table and of Sandia
// OpenSHMEM's init / exchange / startup / fini). Init runs every backend
// of a phase through the same steps on every PE:
//
//	rec, err := Setup()              local work only, no collective call
//	exchange(status, rec)            one bootstrap exchange for the phase
//	next, done, err := Connect(k, recs)   uses every PE's record, no collective call
//	exchange(status, next) ...       until every PE's backends are done
//
// A local failure travels in the exchanged status, so every PE learns it
// from the same exchange and every PE's Init fails naming the PE and its
// error; no PE is left in a collective another PE skipped.
type Backend interface {
	// Name is the backend's name in errors and GOSHMEM_INFO ("ofi").
	Name() string
	// Setup prepares this PE's part without any collective call and
	// returns its record for the phase's first exchange (nil: nothing to
	// send). An error marked with Decline turns the backend off on every
	// PE instead of failing Init (a GPU heap under GOSHMEM_GPU=auto on a
	// node without a GPU).
	Setup() (rec []byte, err error)
	// Connect receives round k's records of every PE (recs[pe]) and
	// returns this PE's record for round k+1, or done when this PE's
	// backend is connected. It makes no collective call.
	Connect(k int, recs [][]byte) (next []byte, done bool, err error)
	// Drain waits until the work the backend accepted (from kernels, from
	// its own queues) has been executed, bounded by timeout (0: none).
	Drain(op string, timeout time.Duration) error
	// Diagnose is what a failed or stuck Synchronize reports about the
	// backend ("" when it has nothing to say).
	Diagnose() string
	// Info is the backend's GOSHMEM_INFO lines for this PE (each names
	// the PE; the runtime adds the "goshmem: info: " prefix).
	Info() []string
	// Close releases the backend. The runtime closes backends in the
	// reverse order of setup; Close after a failed Setup or Connect
	// releases what was made.
	Close() error
}

// Agreed is implemented by a backend that has work to do once every PE's
// Connect has succeeded (the exchange after the last Connect is that
// agreement): a heap region owner closes its handle once every peer has
// mapped it.
type Agreed interface{ Agreed() }

// agreedState is implemented by a backend whose Setup and Connect decide
// from what every PE already agreed on (the settings, the node map,
// earlier phases), so every PE reaches the same outcome without an
// exchange: a phase of such backends alone makes no exchange (the shm
// transport on one node).
type agreedState interface{ DecidesFromAgreedState() }

// declined marks a Setup error that turns a backend off everywhere.
type declined struct{ error }

func (d declined) Unwrap() error { return d.error }

// Decline marks err as "this backend is not available here": the backend
// is then off on every PE (the first PE's reason is kept), and Init goes on.
func Decline(err error) error { return declined{err} }

// Status of one backend of one PE in an exchange.
const (
	stMore     byte = 0 // record follows; more rounds
	stDone     byte = 1 // connected
	stFailed   byte = 2 // error text follows
	stDeclined byte = 3 // off on this PE (reason follows)
	stIdle     byte = 4 // not in this phase on this PE
)

// inlineBytes is the per-PE size of an exchange's first allgather: a
// contribution that fits travels in one allgather; a longer one (a long
// error text, a large record) costs a second allgather of the longest.
const inlineBytes = 1024

// exchange is the one guarded bootstrap exchange: every PE contributes
// payload (any length) and gets every PE's. phase and round are in the
// header, so PEs that reach different exchanges fail naming both instead
// of mixing records.
func (r *Runtime) exchange(tag string, payload []byte) ([][]byte, error) {
	r.exchanges++
	hdr := make([]byte, 16)
	binary.LittleEndian.PutUint32(hdr[0:], uint32(len(payload)))
	binary.LittleEndian.PutUint32(hdr[4:], uint32(r.exchanges))
	binary.LittleEndian.PutUint64(hdr[8:], tagHash(tag))
	first := make([]byte, 16+inlineBytes)
	copy(first, hdr)
	if len(payload) <= inlineBytes {
		copy(first[16:], payload)
	}
	all, err := r.Boot.Allgather(first)
	if err != nil {
		return nil, errs.Wrap(err, r.Me, "Init", "bootstrap exchange %q", tag)
	}
	n := len(first)
	longest := 0
	for pe := 0; pe < r.NPEs; pe++ {
		h := all[pe*n : pe*n+16]
		if seq, th := binary.LittleEndian.Uint32(h[4:]), binary.LittleEndian.Uint64(h[8:]); seq != uint32(r.exchanges) || th != tagHash(tag) {
			return nil, errs.New(errs.ErrNotSymmetric, r.Me, "Init",
				"bootstrap exchange #%d (%s) here met exchange #%d of another step on PE %d: the PEs ran different Init sequences (a goshmem bug, or different goshmem builds)",
				r.exchanges, tag, seq, pe)
		}
		longest = max(longest, int(binary.LittleEndian.Uint32(h[0:])))
	}
	out := make([][]byte, r.NPEs)
	if longest <= inlineBytes {
		for pe := range out {
			l := int(binary.LittleEndian.Uint32(all[pe*n:]))
			out[pe] = all[pe*n+16 : pe*n+16+l]
		}
		return out, nil
	}
	second := make([]byte, longest)
	copy(second, payload)
	all2, err := r.Boot.Allgather(second)
	if err != nil {
		return nil, errs.Wrap(err, r.Me, "Init", "bootstrap exchange %q", tag)
	}
	for pe := range out {
		l := int(binary.LittleEndian.Uint32(all[pe*n:]))
		out[pe] = all2[pe*longest : pe*longest+l]
	}
	return out, nil
}

func tagHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h = (h ^ uint64(s[i])) * 1099511628211
	}
	return h
}

// entry is one backend of a phase with its state on this PE.
type entry struct {
	b      Backend
	st     byte
	rec    []byte
	err    error
	round  int
	closed bool // closed after a decline
}

// encodeStatuses packs one status and record (or error text) per entry.
func encodeStatuses(es []*entry) []byte {
	var b []byte
	for _, e := range es {
		body := e.rec
		if e.st == stFailed || e.st == stDeclined {
			// The sentinel's code, the text, then each hint after a NUL:
			// other PEs' errors match the failing PE's sentinel and carry
			// its hints too.
			body = append([]byte{errs.Code(e.err)}, e.err.Error()...)
			for _, h := range errors.GetAllHints(e.err) {
				body = append(append(body, 0), h...)
			}
		}
		b = append(b, e.st)
		b = binary.LittleEndian.AppendUint32(b, uint32(len(body)))
		b = append(b, body...)
	}
	return b
}

func decodeStatuses(p []byte, n int) (st []byte, body [][]byte, ok bool) {
	st, body = make([]byte, n), make([][]byte, n)
	for i := 0; i < n; i++ {
		if len(p) < 5 {
			return nil, nil, false
		}
		st[i] = p[0]
		l := int(binary.LittleEndian.Uint32(p[1:]))
		if len(p) < 5+l {
			return nil, nil, false
		}
		body[i] = p[5 : 5+l]
		p = p[5+l:]
	}
	return st, body, len(p) == 0
}

// runPhase takes the backends of one phase from Setup to connected on
// every PE, or fails on every PE. Backends that end up connected are
// appended to r.backends (closed by Close, in reverse); declined ones are
// closed and their reason kept in r.declined.
func (r *Runtime) runPhase(phase string, bs []Backend) error {
	if len(bs) == 0 {
		return nil // every PE has the same (empty) phase: nothing to agree on
	}
	if r.localPhase(bs) {
		return r.runLocal(bs)
	}
	es := make([]*entry, len(bs))
	for i, b := range bs {
		e := &entry{b: b}
		es[i] = e
		e.rec, e.err = b.Setup()
		e.st = status(e.err, stMore)
	}
	fail := func(err error) error {
		for i := len(es) - 1; i >= 0; i-- {
			if !es[i].closed {
				_ = es[i].b.Close()
			}
		}
		return err
	}
	for round := 0; ; round++ {
		tag := fmt.Sprintf("%s round %d", phase, round)
		all, err := r.exchange(tag, encodeStatuses(es))
		if err != nil {
			return fail(err)
		}
		sts := make([][]byte, r.NPEs)
		bodies := make([][][]byte, r.NPEs)
		for pe, p := range all {
			var ok bool
			if sts[pe], bodies[pe], ok = decodeStatuses(p, len(es)); !ok {
				return fail(errs.New(errs.ErrNotSymmetric, r.Me, "Init", "%s: PE %d sent a malformed record (%d bytes) for %d backends", tag, pe, len(p), len(es)))
			}
		}
		// Failures first: every PE names every failing PE, in PE order.
		var failures []failure
		for i, e := range es {
			for pe := 0; pe < r.NPEs; pe++ {
				if sts[pe][i] == stFailed {
					failures = append(failures, newFailure(pe, e.b.Name(), bodies[pe][i]))
				}
			}
		}
		if len(failures) > 0 {
			var own error
			for _, e := range es {
				if e.st == stFailed {
					own = e.err
					break
				}
			}
			return fail(r.initFailed(phase, failures, own))
		}
		more := false
		for i, e := range es {
			// A backend declined on any PE is off on every PE.
			declinedOn := -1
			for pe := 0; pe < r.NPEs; pe++ {
				if sts[pe][i] == stDeclined {
					declinedOn = pe
					break
				}
			}
			if declinedOn >= 0 {
				if e.st != stIdle {
					_ = e.b.Close()
					e.closed = true
					reason := e.err
					if e.st != stDeclined {
						reason = errs.Hint(errs.ErrNotSupported, fmt.Sprintf("every PE needs it; see PE %d's reason", declinedOn),
							r.Me, "Init", "%s is off: %s", e.b.Name(), newFailure(declinedOn, e.b.Name(), bodies[declinedOn][i]).text)
					}
					r.declined[e.b.Name()] = reason
				}
				e.st = stIdle
				continue
			}
			if e.st == stIdle {
				continue
			}
			done := true
			for pe := 0; pe < r.NPEs; pe++ {
				if s := sts[pe][i]; s == stMore {
					done = false
				}
			}
			if done && e.st == stDone {
				continue
			}
			if e.st == stDone {
				// This PE is done while another PE still has rounds: keep
				// contributing an empty record until all are done.
				more = true
				continue
			}
			recs := make([][]byte, r.NPEs)
			for pe := range recs {
				recs[pe] = bodies[pe][i]
			}
			next, ok, err := e.b.Connect(e.round, recs)
			e.round++
			e.rec, e.err = next, err
			switch {
			case err != nil:
				e.st = stFailed
			case ok:
				e.st, e.rec = stDone, nil
			default:
				e.st = stMore
			}
			more = true
		}
		if !more {
			break
		}
	}
	for _, e := range es {
		if e.st == stDone {
			if a, ok := e.b.(Agreed); ok {
				a.Agreed()
			}
			r.backends = append(r.backends, e.b)
		}
	}
	return nil
}

// localPhase reports whether every backend of the phase decides from the
// agreed state (no exchange needed).
func (r *Runtime) localPhase(bs []Backend) bool {
	for _, b := range bs {
		if _, ok := b.(agreedState); !ok {
			return false
		}
	}
	return true
}

// runLocal takes an agreed-state phase through Setup and one Connect on
// this PE alone; every PE gets the same outcome.
func (r *Runtime) runLocal(bs []Backend) error {
	for i, b := range bs {
		_, err := b.Setup()
		if err == nil {
			_, _, err = b.Connect(0, nil)
		}
		if err != nil {
			for j := i; j >= 0; j-- {
				_ = bs[j].Close()
			}
			return err
		}
	}
	r.backends = append(r.backends, bs...)
	return nil
}

// status is the exchange status for a Setup or Connect result.
func status(err error, ok byte) byte {
	switch {
	case err == nil:
		return ok
	case errors.As(err, new(declined)):
		return stDeclined
	}
	return stFailed
}

// failure is another PE's failure as an exchange carried it.
type failure struct {
	text     string // "PE 3: ofi: <its error>"
	sentinel error
	hints    []string
}

func newFailure(pe int, what string, body []byte) failure {
	text := errText(body)
	var f failure
	if len(body) > 0 {
		f.sentinel = errs.Sentinel(body[0])
		f.hints = strings.Split(string(body[1:]), "\x00")[1:]
	}
	if f.sentinel != nil {
		// The error made from it here ends with the sentinel's text.
		text = strings.TrimSuffix(text, ": "+strings.TrimPrefix(f.sentinel.Error(), "goshmem: "))
	}
	// The failing PE's own "goshmem: PE <pe>: " prefix is said once.
	text = strings.TrimPrefix(strings.TrimPrefix(text, "goshmem: "), fmt.Sprintf("PE %d: ", pe))
	if !strings.HasPrefix(text, "Init: ") {
		text = "Init: " + text
	}
	f.text = fmt.Sprintf("PE %d: %s (%s)", pe, text, what)
	return f
}

// errText is the text of a failure's body (after the sentinel's code,
// before the hints).
func errText(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	text, _, _ := strings.Cut(string(body[1:]), "\x00")
	return text
}

// initFailed is Init's error on every PE after an exchange reported
// failures: the list of failing PEs with their errors, and this PE's own
// error (with its hints and sentinel) when it is one of them. On a PE
// that did not fail, the error matches the first failure's sentinel.
func (r *Runtime) initFailed(phase string, failures []failure, own error) error {
	texts := make([]string, len(failures))
	for i, f := range failures {
		texts[i] = f.text
	}
	msg := strings.Join(texts, "; ")
	var err error
	if own != nil {
		if len(failures) == 1 {
			return own
		}
		err = errs.Wrap(own, r.Me, "Init", "%s failed on %d PEs (%s); this PE's error", phase, len(failures), msg)
	} else {
		sentinel := failures[0].sentinel
		if sentinel == nil {
			sentinel = errs.ErrInvalidArgument
		}
		err = errs.Hint(sentinel, "see the failing PEs' errors; every PE's Init fails with them",
			r.Me, "Init", "%s failed on another PE: %s", phase, msg)
	}
	// The failing PEs' hints, each once.
	seen := map[string]bool{}
	for _, h := range errors.GetAllHints(err) {
		seen[h] = true
	}
	for _, f := range failures {
		for _, h := range f.hints {
			if !seen[h] {
				seen[h] = true
				err = errors.WithHint(err, h)
			}
		}
	}
	return err
}
