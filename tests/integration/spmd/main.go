// Command spmd is goshmem's multi-PE integration program: one SPMD binary
// holding many named checks, run under mpirun by tests/integration (or by
// hand):
//
//	mpirun --oversubscribe -np 4 ./spmd -run 'rma|amo' -v
//
// Every PE runs the same selected checks in the same order (most checks
// call collectives). A check is a func(*T); T records failures with the
// check's name, the PE, the expected and the observed value. After each
// check the PEs agree on its failure count (a Reduce over TeamWorld), and
// PE 0 prints "ok" or "FAIL" for it and a final "N passed, M failed" line.
// The process exits 0 only if every selected check passed on every PE.
//
// Modes (-mode) other than "checks" exist for the fault and timing tests:
// initfin (Init + Finalize only, prints the time), fault-panic (PE 1 panics
// while the others wait), fault-exit (PE 1 calls os.Exit(3) without
// Finalize), coll-mismatch and coll-timeout (the world team falls out of
// step: outofstep.go), init-report (Init under per-rank faults, every PE
// prints its outcome) and finalize-skip (PE 1 never calls Finalize):
// initfault.go; teams-many (as many teams as GOSHMEM_MAX_TEAMS allows,
// alive at once: teams.go); the gpu-* modes of gpu.go; builds with -tags
// goshmem_faults add faults.go's modes.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"regexp"
	"runtime/debug"
	"strings"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

var (
	runFlag   = flag.String("run", "", "regexp selecting the checks to run (empty: all)")
	skipFlag  = flag.String("skip", "", "regexp of checks to skip")
	listFlag  = flag.Bool("list", false, "list the checks and exit (no Init)")
	modeFlag  = flag.String("mode", "checks", "checks | initfin | init-asym | fault-panic | fault-exit | coll-mismatch | coll-timeout | init-report | finalize-skip | teams-many")
	verbose   = flag.Bool("v", false, "PE 0 prints every check's result, not only failures")
	heapFlag  = flag.Uint64("heap", 32<<20, "symmetric heap bytes per PE (WithSymmetricSize); 0 = GOSHMEM_SYMMETRIC_SIZE")
	guardFlag = flag.Duration("guard", 60*time.Second,
		"watchdog (WithTimeout) when GOSHMEM_TIMEOUT is not set, so a hung check fails instead of hanging; 0 = off")
	faultWait = flag.String("fault-wait", "wait", "what the surviving PEs do in the fault modes: wait (WaitUntil), barrier (BarrierAll) or get (G from PE 1 in a loop)")
)

// check is one named check. minPEs > 0 skips it on smaller jobs (a skip is
// reported and counts as neither pass nor fail).
type check struct {
	name   string
	fn     func(*T)
	minPEs int
	// needTimeout: runs only when GOSHMEM_TIMEOUT is set in the environment.
	needTimeout bool
}

var registry []check

func register(name string, fn func(*T)) { registry = append(registry, check{name: name, fn: fn}) }
func registerMin(name string, min int, fn func(*T)) {
	registry = append(registry, check{name: name, fn: fn, minPEs: min})
}

func main() {
	flag.Parse()
	if err := applyRankEnv(); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: %v\n", err)
		os.Exit(2)
	}
	if *denyPtraceFlag {
		if err := denyPtrace(); err != nil {
			fmt.Fprintf(os.Stderr, "spmd: %v\n", err)
			os.Exit(2)
		}
	}
	registerAll()
	if *listFlag {
		for _, c := range registry {
			fmt.Println(c.name)
		}
		return
	}
	var code int
	switch *modeFlag {
	case "checks":
		code = runChecks()
	case "initfin":
		code = initFin()
	case "init-asym":
		code = initAsym()
	case "fault-panic", "fault-exit":
		code = fault(*modeFlag)
	case "coll-mismatch", "coll-timeout":
		code = outOfStep(*modeFlag)
	case "init-report":
		code = initReport()
	case "finalize-skip":
		code = finalizeSkip()
	case "teams-many":
		code = teamsMany()
	case "ctx-leave":
		code = ctxLeave()
	case "ctx-step":
		code = ctxStep()
	default:
		if m, ok := gpuModes[*modeFlag]; ok {
			code = m()
			break
		}
		if m, ok := faultModes[*modeFlag]; ok {
			code = m()
			break
		}
		fmt.Fprintf(os.Stderr, "spmd: unknown -mode %q\n", *modeFlag)
		code = 2
	}
	os.Exit(code)
}

// faultModes are the modes of builds with -tags goshmem_faults (fault
// injection through the library's test hooks; faults.go).
var faultModes = map[string]func() int{}

func initOpts() []shmem.Option {
	var opts []shmem.Option
	if *heapFlag != 0 {
		opts = append(opts, shmem.WithSymmetricSize(*heapFlag))
	}
	if os.Getenv("GOSHMEM_TIMEOUT") == "" && *guardFlag > 0 {
		opts = append(opts, shmem.WithTimeout(*guardFlag))
	}
	return opts
}

func runChecks() int {
	var run, skip *regexp.Regexp
	if *runFlag != "" {
		run = regexp.MustCompile(*runFlag)
	}
	if *skipFlag != "" {
		skip = regexp.MustCompile(*skipFlag)
	}

	// Lifecycle checks that must run outside Init/Finalize are local: their
	// failures are added to this PE's count after Init (before) and to the
	// exit code (after).
	pre := &T{name: "lifecycle/before-init", me: -1}
	checkBeforeInit(pre)

	start := time.Now()
	if err := shmem.Init(initOpts()...); err != nil {
		fmt.Fprintf(os.Stderr, "spmd: Init: %+v\n", err)
		return 1
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	pre.me, pre.n = me, n
	for _, f := range pre.msgs {
		fmt.Printf("FAIL %s: PE %d: %s\n", pre.name, me, f)
	}
	if me == 0 {
		fmt.Printf("spmd: %d PEs, Init took %v\n", n, time.Since(start).Round(time.Millisecond))
	}
	// The summary arrays come first, so no check (heap exhaustion, debug
	// quarantine) can keep the runner from counting.
	cnt, err := shmem.Alloc[int64](1)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spmd: PE %d: Alloc of the summary word: %+v\n", me, err)
		return 1
	}
	sum, err := shmem.Alloc[int64](1)
	if err != nil {
		fmt.Fprintf(os.Stderr, "spmd: PE %d: Alloc of the summary word: %+v\n", me, err)
		return 1
	}
	reduce := func(v int64) int64 {
		cnt.Local()[0] = v
		if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, sum, cnt, 1); err != nil {
			fmt.Printf("FAIL runner: PE %d: Reduce of failure counts: %v\n", me, err)
			return v + 1
		}
		return sum.Local()[0]
	}
	if got := reduce(int64(pre.fails)); got != 0 {
		if me == 0 {
			fmt.Printf("--- FAIL %s (%d failures over all PEs)\n", pre.name, got)
		}
	}
	passed, failed, skipped := 0, 0, 0
	if pre.fails > 0 {
		failed++
	} else {
		passed++
	}
	timeoutSet := os.Getenv("GOSHMEM_TIMEOUT") != ""
	for _, c := range registry {
		if (run != nil && !run.MatchString(c.name)) || (skip != nil && skip.MatchString(c.name)) {
			continue
		}
		if n < c.minPEs || (c.needTimeout && !timeoutSet) {
			skipped++
			if me == 0 && *verbose {
				why := fmt.Sprintf("needs %d PEs", c.minPEs)
				if c.needTimeout {
					why = "needs GOSHMEM_TIMEOUT"
				}
				fmt.Printf("--- SKIP %s (%s)\n", c.name, why)
			}
			continue
		}
		t := &T{name: c.name, me: me, n: n}
		t0 := time.Now()
		t.run(c.fn)
		// Every check ends in step: finish all traffic, then agree.
		if err := shmem.BarrierAll(); err != nil {
			t.Errorf("BarrierAll after the check: %v", err)
		}
		total := reduce(int64(t.fails))
		if total == 0 {
			passed++
			if me == 0 && *verbose {
				fmt.Printf("ok   %s (%v)\n", c.name, time.Since(t0).Round(time.Millisecond))
			}
		} else {
			failed++
			if me == 0 {
				fmt.Printf("--- FAIL %s (%d failures over all PEs, %v)\n", c.name, total, time.Since(t0).Round(time.Millisecond))
			}
		}
	}
	if me == 0 {
		fmt.Printf("spmd: np %d: %d passed, %d failed, %d skipped\n", n, passed, failed, skipped)
	}
	if err := cnt.Free(); err != nil {
		fmt.Printf("FAIL runner: PE %d: Free: %v\n", me, err)
		failed++
	}
	if err := sum.Free(); err != nil {
		fmt.Printf("FAIL runner: PE %d: Free: %v\n", me, err)
		failed++
	}
	if err := shmem.Finalize(); err != nil {
		fmt.Printf("FAIL runner: PE %d: Finalize: %v\n", me, err)
		failed++
	}
	post := &T{name: "lifecycle/after-finalize", me: me, n: n}
	checkAfterFinalize(post, cnt)
	for _, f := range post.msgs {
		fmt.Printf("FAIL %s: PE %d: %s\n", post.name, me, f)
	}
	if failed > 0 || post.fails > 0 {
		return 1
	}
	return 0
}

// T collects one check's failures on one PE.
type T struct {
	name  string
	me, n int
	fails int
	msgs  []string
}

type fatalPanic struct{}

// maxPrinted bounds the failure lines one check prints per PE.
const maxPrinted = 12

func (t *T) Errorf(format string, args ...any) {
	t.fails++
	msg := fmt.Sprintf(format, args...)
	if t.me < 0 { // before Init: printed once the PE number is known
		t.msgs = append(t.msgs, msg)
		return
	}
	if t.fails <= maxPrinted {
		fmt.Printf("FAIL %s: PE %d of %d: %s\n", t.name, t.me, t.n, msg)
	} else if t.fails == maxPrinted+1 {
		fmt.Printf("FAIL %s: PE %d of %d: (further failures not printed)\n", t.name, t.me, t.n)
	}
}

// Fatalf records a failure and ends the check on this PE. Other PEs may
// then wait in a collective this PE skips; the -guard watchdog turns that
// into a timeout failure instead of a hang.
func (t *T) Fatalf(format string, args ...any) {
	t.Errorf(format, args...)
	panic(fatalPanic{})
}

func (t *T) run(fn func(*T)) {
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(fatalPanic); !ok {
				t.Errorf("panic: %v\n%s", p, debug.Stack())
			}
		}
	}()
	fn(t)
}

// Must ends the check if err is not nil (a precondition).
func (t *T) Must(what string, err error) {
	if err != nil {
		t.Fatalf("%s: unexpected error: %+v", what, err)
	}
}

// OK records a failure if err is not nil.
func (t *T) OK(what string, err error) bool {
	if err != nil {
		t.Errorf("%s: unexpected error: %v", what, err)
		return false
	}
	return true
}

// Is asserts that err matches sentinel (errors.Is) and that its message
// contains every string of contains.
func (t *T) Is(what string, err, sentinel error, contains ...string) bool {
	if err == nil {
		t.Errorf("%s: got nil error, want %v", what, sentinel)
		return false
	}
	if !errors.Is(err, sentinel) {
		t.Errorf("%s: got error %q, want one matching %v", what, err, sentinel)
		return false
	}
	ok := true
	for _, s := range contains {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("%s: error %q does not contain %q", what, err, s)
			ok = false
		}
	}
	return ok
}

// Eq asserts got == want.
func Eq[V comparable](t *T, what string, got, want V) bool {
	if got != want {
		t.Errorf("%s: got %v, want %v", what, got, want)
		return false
	}
	return true
}

// EqSlice asserts got == want element by element, reporting the first
// few differences.
func EqSlice[V comparable](t *T, what string, got, want []V) bool {
	if len(got) != len(want) {
		t.Errorf("%s: got %d elements, want %d", what, len(got), len(want))
		return false
	}
	bad := 0
	for i := range got {
		if got[i] != want[i] {
			if bad < 3 {
				t.Errorf("%s: [%d]: got %v, want %v", what, i, got[i], want[i])
			}
			bad++
		}
	}
	if bad > 3 {
		t.Errorf("%s: %d of %d elements differ", what, bad, len(got))
	}
	return bad == 0
}

// True asserts cond.
func (t *T) True(what string, cond bool) bool {
	if !cond {
		t.Errorf("%s: want true", what)
	}
	return cond
}

// usable asserts the runtime still works after a bad call: a Put to the
// next PE and a barrier, with the value checked.
func usable(t *T, after string) {
	a, err := shmem.Alloc[int64](1)
	if !t.OK("after "+after+": Alloc", err) {
		return
	}
	defer func() { t.OK("after "+after+": Free", a.Free()) }()
	next, prev := (t.me+1)%t.n, (t.me-1+t.n)%t.n
	t.OK("after "+after+": Put", shmem.Put(a, 0, []int64{int64(1000 + t.me)}, next))
	t.OK("after "+after+": BarrierAll", shmem.BarrierAll())
	Eq(t, "after "+after+": value put by the previous PE", a.Local()[0], int64(1000+prev))
	t.OK("after "+after+": BarrierAll", shmem.BarrierAll())
}
