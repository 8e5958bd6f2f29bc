// Package local is a bootstrap.Bootstrap whose PEs are goroutines of one
// process: NewJob(n) returns n connected bootstraps. It is for fast unit
// tests (Run starts the goroutines and joins their errors) and, with n = 1,
// for a program started without mpirun, which must not pay for MPI.
//
// Collectives meet in rounds guarded by one mutex and condition variable:
// each PE deposits its part in the current round, the last to arrive
// computes the result, opens the next round and wakes the others, who read
// the result from the round they joined (so a fast PE can already be in the
// next round). A mismatch (different collectives, lengths or roots) fails the
// round on every PE alike. A PE that aborts, finalizes or leaves Run while
// others wait makes their collectives fail instead of hanging.
package local

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/debug"
	"sync"

	errors "github.com/goshmem/goshmem/internal/xerrors"

	"github.com/goshmem/goshmem/internal/bootstrap"
	"github.com/goshmem/goshmem/internal/errs"
	"github.com/goshmem/goshmem/internal/logx"
)

// ErrAborted is matched (errors.Is) by the error that collectives return on
// every PE once some PE of the job has called Abort.
var ErrAborted = errors.New("local: job aborted")

// Option configures a job made by NewJob or Run.
type Option func(*config)

type config struct {
	stderr      io.Writer
	exitOnAbort bool
}

// Stderr makes Abort print its message to w instead of os.Stderr.
func Stderr(w io.Writer) Option { return func(c *config) { c.stderr = w } }

// ExitOnAbort makes Abort end the process with os.Exit(code) after printing
// its message, instead of ending only the calling goroutine. Use it for a
// real program run as a 1-PE job (runtime.Goexit on the main goroutine would
// leave the process deadlocked), never in tests.
func ExitOnAbort() Option { return func(c *config) { c.exitOnAbort = true } }

type opKind int

const (
	opBarrier opKind = iota
	opAllgather
	opBcast
)

func (k opKind) String() string {
	switch k {
	case opBarrier:
		return "Barrier"
	case opAllgather:
		return "Allgather"
	case opBcast:
		return "Bcast"
	}
	return fmt.Sprintf("op(%d)", int(k))
}

// round is one collective, met by every PE.
type round struct {
	kinds []opKind
	ins   [][]byte
	roots []int
	count int    // PEs arrived
	done  bool   // result or err is set
	out   []byte // Allgather: the concatenation; Bcast: root's data
	err   error
}

func newRound(n int) *round {
	return &round{kinds: make([]opKind, n), ins: make([][]byte, n), roots: make([]int, n)}
}

// job is what the PEs of one NewJob share. mu guards everything below it.
type job struct {
	n   int
	cfg config

	mu       sync.Mutex
	cond     *sync.Cond
	cur      *round
	gone     []string // why PE r can no longer join collectives ("" if it can)
	broken   string   // the first PE's reason in gone: no collective can complete
	aborted  error    // set by the first Abort
	abortsBy []error  // abortsBy[r]: the error PE r's own Abort recorded
}

// pe is one PE's bootstrap.
type pe struct {
	j    *job
	rank int
	log  *logx.Switch // Abort's message: the job's stderr, or SetLogger's
}

var (
	_ bootstrap.Bootstrap = (*pe)(nil)
	_ bootstrap.Logged    = (*pe)(nil)
)

// NewJob returns the n bootstraps of one job; element r has rank r. Each
// must be used by its own goroutine(s), like a process under mpirun.
func NewJob(n int, opts ...Option) ([]bootstrap.Bootstrap, error) {
	if n < 1 {
		return nil, errors.Newf("local: job of %d PEs, want at least 1", n)
	}
	j := newJob(n, opts)
	bs := make([]bootstrap.Bootstrap, n)
	for r := range n {
		bs[r] = &pe{j: j, rank: r, log: logx.NewSwitch(j.cfg.stderr)}
	}
	return bs, nil
}

func newJob(n int, opts []Option) *job {
	j := &job{
		n:        n,
		cfg:      config{stderr: os.Stderr},
		cur:      newRound(n),
		gone:     make([]string, n),
		abortsBy: make([]error, n),
	}
	for _, o := range opts {
		o(&j.cfg)
	}
	j.cond = sync.NewCond(&j.mu)
	return j
}

// Run starts n PEs of one job as goroutines running fn and waits for all of
// them. It returns the errors of every PE joined (nil if all returned nil),
// each wrapped with its PE. A PE that panics or calls Abort yields an error
// for that PE, and the other PEs' pending and later collectives fail rather
// than hang; so does a PE that returns while others still wait for it.
func Run(n int, fn func(b bootstrap.Bootstrap) error, opts ...Option) error {
	bs, err := NewJob(n, opts...)
	if err != nil {
		return err
	}
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runPE(bs[r].(*pe), fn, &errs[r])
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// runPE runs fn for one PE and stores its error in *errp, turning a panic,
// an Abort or a Goexit into that PE's error. (A Goexit never returns to
// runPE's caller, so the error is stored from the deferred function.)
func runPE(p *pe, fn func(b bootstrap.Bootstrap) error, errp *error) {
	returned := false
	var err error
	defer func() {
		defer func() { *errp = err }()
		if v := recover(); v != nil {
			err = errors.Newf("local: PE %d panicked: %v\n%s", p.rank, v, debug.Stack())
			p.j.leave(p.rank, fmt.Sprintf("PE %d panicked: %v", p.rank, v))
			return
		}
		p.j.leave(p.rank, fmt.Sprintf("PE %d returned from Run's function", p.rank))
		if returned {
			return
		}
		p.j.mu.Lock()
		err = p.j.abortsBy[p.rank]
		p.j.mu.Unlock()
		if err == nil {
			err = errors.Newf("local: PE %d exited by runtime.Goexit", p.rank)
		}
	}()
	err = fn(p)
	if err != nil {
		err = errors.Wrapf(err, "PE %d", p.rank)
	}
	returned = true
}

// leave records that PE r will join no more collectives (unless it already
// said why) and wakes the PEs that wait for it.
func (j *job) leave(r int, why string) {
	j.mu.Lock()
	defer j.mu.Unlock()
	j.goneLocked(r, why)
}

// goneLocked records why PE r joins no more collectives, unless it already
// said why, and wakes the PEs that wait for it.
func (j *job) goneLocked(r int, why string) {
	if j.gone[r] == "" {
		j.gone[r] = why
		if j.broken == "" {
			j.broken = why
		}
	}
	j.cond.Broadcast()
}

// Name returns "local".
func (p *pe) Name() string { return "local" }

// Rank returns this PE's rank.
func (p *pe) Rank() int { return p.rank }

// Size returns the number of PEs in the job.
func (p *pe) Size() int { return p.j.n }

// Node returns all zeros: every PE shares this process's node.
func (p *pe) Node() []int { return make([]int, p.j.n) }

// Allgather returns every PE's in, concatenated in rank order (a fresh slice
// per PE). If the lengths differ, every PE gets an error listing them.
func (p *pe) Allgather(in []byte) ([]byte, error) {
	out, err := p.collective(opAllgather, in, 0)
	if err != nil {
		return nil, errors.Wrapf(err, "local: PE %d: Allgather(%d bytes)", p.rank, len(in))
	}
	return out, nil
}

// Barrier returns once every PE has entered it.
func (p *pe) Barrier() error {
	if _, err := p.collective(opBarrier, nil, 0); err != nil {
		return errors.Wrapf(err, "local: PE %d: Barrier", p.rank)
	}
	return nil
}

// Bcast overwrites buf on every PE with root's buf. Different lengths or
// roots between PEs, or a root outside [0, Size()), fail on every PE.
func (p *pe) Bcast(buf []byte, root int) error {
	out, err := p.collective(opBcast, buf, root)
	if err != nil {
		return errors.Wrapf(err, "local: PE %d: Bcast(%d bytes, root %d)", p.rank, len(buf), root)
	}
	copy(buf, out)
	return nil
}

// collective joins the current round and waits for it to complete. It
// returns a copy of the round's output.
func (p *pe) collective(kind opKind, in []byte, root int) ([]byte, error) {
	j := p.j
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.gone[p.rank] != "" {
		return nil, errors.Newf("called after %s", j.gone[p.rank])
	}
	if err := j.brokenLocked(); err != nil {
		return nil, err
	}
	r := j.cur
	r.kinds[p.rank] = kind
	r.ins[p.rank] = in
	r.roots[p.rank] = root
	r.count++
	if r.count == j.n {
		r.complete()
		j.cur = newRound(j.n)
		j.cond.Broadcast()
	}
	for !r.done {
		if err := j.brokenLocked(); err != nil {
			return nil, err
		}
		j.cond.Wait()
	}
	if r.err != nil {
		return nil, r.err
	}
	return append([]byte(nil), r.out...), nil
}

// brokenLocked returns why no collective can complete any more: an Abort,
// or a PE that finalized or left.
func (j *job) brokenLocked() error {
	if j.aborted != nil {
		return j.aborted
	}
	if j.broken != "" {
		return errors.Newf("job broken: %s", j.broken)
	}
	return nil
}

// complete computes the round's result once every PE has arrived; every PE
// is still blocked in the round, so their buffers are stable.
func (r *round) complete() {
	r.done = true
	k := r.kinds[0]
	for _, kk := range r.kinds {
		if kk != k {
			r.err = errors.Newf("PEs entered different collectives: %v", r.kinds)
			return
		}
	}
	lens := make([]int, len(r.ins))
	same := true
	for i, in := range r.ins {
		lens[i] = len(in)
		same = same && lens[i] == lens[0]
	}
	switch k {
	case opBarrier:
	case opAllgather:
		if !same {
			r.err = errors.Newf("Allgather lengths differ between PEs: %v", lens)
			return
		}
		r.out = make([]byte, 0, lens[0]*len(r.ins))
		for _, in := range r.ins {
			r.out = append(r.out, in...)
		}
	case opBcast:
		if !same {
			r.err = errors.Newf("Bcast lengths differ between PEs: %v", lens)
			return
		}
		root := r.roots[0]
		for _, rr := range r.roots {
			if rr != root {
				r.err = errors.Newf("Bcast roots differ between PEs: %v", r.roots)
				return
			}
		}
		if root < 0 || root >= len(r.ins) {
			r.err = errors.Newf("Bcast root %d is outside [0, %d)", root, len(r.ins))
			return
		}
		r.out = append([]byte(nil), r.ins[root]...)
	}
}

// Abort marks the job aborted, so that every PE blocked in or later entering
// a collective gets an error (matching ErrAborted) naming this PE and msg;
// prints "goshmem: PE <rank>: <msg>"; then ends the calling goroutine with
// runtime.Goexit (or the process with os.Exit(code) under ExitOnAbort). It
// does not return.
func (p *pe) Abort(code int, msg string) {
	j := p.j
	err := errs.Mark(errors.Newf("job aborted by PE %d (code %d): %s", p.rank, code, msg), ErrAborted)
	j.mu.Lock()
	if j.aborted == nil {
		j.aborted = err
	}
	j.abortsBy[p.rank] = err
	j.goneLocked(p.rank, fmt.Sprintf("PE %d aborted", p.rank))
	j.mu.Unlock()
	p.log.Log(slog.LevelError, fmt.Sprintf("goshmem: PE %d: %s\n", p.rank, msg), msg,
		logx.PE(p.rank), slog.String("backend", "bootstrap"), slog.Int("code", code))
	if j.cfg.exitOnAbort {
		os.Exit(code)
	}
	runtime.Goexit()
}

// SetLogger sends Abort's message to l instead of the job's stderr.
func (p *pe) SetLogger(l *slog.Logger) { p.log.Set(l) }

// Finalize marks this PE finalized: its later collectives, and any other
// PE's collective that would need it, return an error. A second Finalize
// is an error too.
func (p *pe) Finalize() error {
	j := p.j
	j.mu.Lock()
	defer j.mu.Unlock()
	if why := j.gone[p.rank]; why != "" {
		return errors.Newf("local: PE %d: Finalize after %s", p.rank, why)
	}
	j.goneLocked(p.rank, fmt.Sprintf("PE %d finalized", p.rank))
	return nil
}
