package main

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

// The multi-element waits and tests (shmem/wait.go) across PEs: elements
// written by peers, in random order, while this PE waits on them.

func init() { moreChecks = append(moreChecks, registerWaitSet) }

func registerWaitSet() {
	typed("waitset/all", waitSetAll[int8], waitSetAll[int16], waitSetAll[int32], waitSetAll[int64],
		waitSetAll[uint8], waitSetAll[uint16], waitSetAll[uint32], waitSetAll[uint64],
		waitSetAll[float32], waitSetAll[float64])
	for _, m := range []string{"any-skip", "any-reset", "some-skip", "test-poll"} {
		register("waitset/"+m+"/int32", waitSetConsumer[int32](m))
		register("waitset/"+m+"/uint64", waitSetConsumer[uint64](m))
	}
	register("waitset/"+"any-skip/int8", waitSetConsumer[int8]("any-skip"))
	register("waitset/"+"some-skip/float64", waitSetConsumer[float64]("some-skip"))
}

// pause lets other PEs run between a producer's writes: mostly a
// goroutine switch, sometimes a short sleep, so arrivals interleave with
// the consumer's looks.
func pause(rng *rand.Rand) {
	if rng.IntN(4) == 0 {
		time.Sleep(time.Duration(20+rng.IntN(200)) * time.Microsecond)
	} else {
		runtime.Gosched()
	}
}

// waitSetAll: every PE waits with WaitUntilAll (and the Vector form) on
// its 2n elements, element j written by PE (me+1+j)%n (so by different
// peers), each after a fenced put of its data, in random order; every
// third element (j%3 == 1) is skipped and never written. TestAll is false
// before the round's writes and true after the wait.
func waitSetAll[V shmem.Elem](t *T) {
	me, n := t.me, t.n
	m := 2 * n
	w, err := shmem.Alloc[V](m)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", w.Free()) }()
	data, err := shmem.Alloc[int64](m)
	t.Must("Alloc", err)
	defer func() { t.OK("Free", data.Free()) }()
	clear(w.Local())
	clear(data.Local())
	skip := make([]bool, m)
	for j := range skip {
		skip[j] = j%3 == 1
	}
	writer := func(q, j int) int { return (q + 1 + j) % n }
	// Round r's values rise above every earlier round's: 20+j%7, 40+j%7, 60+j%7.
	val := func(r, j int) V { return V(20*r + j%7) }
	rng := rand.New(rand.NewPCG(uint64(me), 16))
	for r := 1; r <= 3; r++ {
		vals := make([]V, m)
		for j := range vals {
			vals[j] = val(r, j)
		}
		// Round 1: >= 20 (one value); round 2: == vals (Vector); round 3: > 59.
		cmp, v, what := shmem.CmpGE, V(20), "WaitUntilAll >= 20"
		switch r {
		case 2:
			cmp, what = shmem.CmpEQ, "WaitUntilAllVector == vals"
		case 3:
			cmp, v, what = shmem.CmpGT, V(59), "WaitUntilAll > 59"
		}
		testAll := func() (bool, error) {
			if r == 2 {
				return shmem.TestAllVector(w, 0, m, skip, cmp, vals)
			}
			return shmem.TestAll(w, 0, m, skip, cmp, v)
		}
		t.Must("BarrierAll", shmem.BarrierAll())
		ok, err := testAll()
		t.OK("TestAll", err)
		Eq(t, fmt.Sprintf("round %d: TestAll before the writes", r), ok, false)
		t.Must("BarrierAll", shmem.BarrierAll()) // nobody writes before every PE tested

		// This PE's writes: element j of PE q where writer(q, j) == me.
		type job struct{ q, j int }
		var jobs []job
		for q := range n {
			for j := range m {
				if writer(q, j) == me && !skip[j] {
					jobs = append(jobs, job{q, j})
				}
			}
		}
		rng.Shuffle(len(jobs), func(a, b int) { jobs[a], jobs[b] = jobs[b], jobs[a] })
		done := make(chan error, 1)
		go func() {
			for k, jb := range jobs {
				d := int64(r)<<16 | int64(me)<<8 | int64(jb.j)
				if err := shmem.P(data, jb.j, d, jb.q); err != nil {
					done <- err
					return
				}
				if err := shmem.Fence(); err != nil {
					done <- err
					return
				}
				if k%2 == 0 {
					err = shmem.P(w, jb.j, val(r, jb.j), jb.q)
				} else {
					err = shmem.AtomicSet(w, jb.j, val(r, jb.j), jb.q)
				}
				if err != nil {
					done <- err
					return
				}
				pause(rng)
			}
			done <- nil
		}()
		if r == 2 {
			t.OK(what, shmem.WaitUntilAllVector(w, 0, m, skip, cmp, vals))
		} else {
			t.OK(what, shmem.WaitUntilAll(w, 0, m, skip, cmp, v))
		}
		loc, dl := w.Local(), data.Local()
		for j := range m {
			if skip[j] {
				Eq(t, fmt.Sprintf("round %d: skipped element %d", r, j), loc[j], V(0))
				continue
			}
			Eq(t, fmt.Sprintf("round %d: element %d after %s", r, j, what), loc[j], val(r, j))
			Eq(t, fmt.Sprintf("round %d: data %d (fenced before element %d by PE %d)", r, j, j, writer(me, j)),
				dl[j], int64(r)<<16|int64(writer(me, j))<<8|int64(j))
		}
		ok, err = testAll()
		t.OK("TestAll", err)
		Eq(t, fmt.Sprintf("round %d: TestAll after %s", r, what), ok, true)
		t.OK("writer", <-done)
	}
	t.Must("BarrierAll", shmem.BarrierAll())
}

// slotsPer is how many slots each producer fills in each consumer's array.
const slotsPer = 3

// waitSetConsumer: every PE consumes the slots a[1 : 1+(n-1)*slotsPer],
// slotsPer from each other PE, which every PE produces into its peers in
// random order (a fenced data put, then the slot), while it consumes its
// own: with WaitUntilAny and a skip mask (any-skip), WaitUntilAnyVector
// resetting each consumed slot instead (any-reset), WaitUntilSome with a
// skip mask (some-skip), or polling TestAny and TestSome (test-poll). Every
// slot must be seen exactly once, with its value and its data; a[0] and
// the last element lie outside the range and satisfy the comparison.
func waitSetConsumer[V shmem.Elem](mode string) func(*T) {
	return func(t *T) {
		me, n := t.me, t.n
		cnt := (n - 1) * slotsPer
		a, err := shmem.Alloc[V](cnt + 2)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", a.Free()) }()
		data, err := shmem.Alloc[int64](cnt + 2)
		t.Must("Alloc", err)
		defer func() { t.OK("Free", data.Free()) }()
		rng := rand.New(rand.NewPCG(uint64(me), 17))
		// The producer of slot i on consumer c, and its value and data.
		producer := func(c, i int) int { return (c + 1 + i/slotsPer) % n }
		slotVal := func(i int) V { return V(1 + i) }
		slotData := func(p, i int) int64 { return int64(p)<<16 | int64(i) }
		vals := make([]V, cnt)
		for i := range vals {
			vals[i] = slotVal(i)
		}
		for round := 1; round <= 2; round++ {
			clear(a.Local())
			clear(data.Local())
			a.Local()[0], a.Local()[cnt+1] = 99, 99
			t.Must("BarrierAll", shmem.BarrierAll())

			type job struct{ c, i int }
			var jobs []job
			for c := range n {
				if c == me {
					continue
				}
				for s := range slotsPer {
					jobs = append(jobs, job{c, ((me-c-1+n)%n)*slotsPer + s})
				}
			}
			rng.Shuffle(len(jobs), func(x, y int) { jobs[x], jobs[y] = jobs[y], jobs[x] })
			done := make(chan error, 1)
			go func() {
				for k, jb := range jobs {
					if err := shmem.P(data, 1+jb.i, slotData(me, jb.i), jb.c); err != nil {
						done <- err
						return
					}
					if err := shmem.Fence(); err != nil {
						done <- err
						return
					}
					if k%2 == 0 {
						err = shmem.AtomicSet(a, 1+jb.i, slotVal(jb.i), jb.c)
					} else {
						err = shmem.P(a, 1+jb.i, slotVal(jb.i), jb.c)
					}
					if err != nil {
						done <- err
						return
					}
					pause(rng)
				}
				done <- nil
			}()

			seen := make([]int, cnt)
			skip := make([]bool, cnt)
			consume := func(how string, i int) bool {
				if i < 0 || i >= cnt {
					t.Errorf("round %d: %s returned index %d outside [0, %d)", round, how, i, cnt)
					return false
				}
				seen[i]++
				if seen[i] > 1 {
					t.Errorf("round %d: %s returned slot %d again", round, how, i)
					return false
				}
				Eq(t, fmt.Sprintf("round %d: slot %d's value (%s)", round, i, how), a.Local()[1+i], slotVal(i))
				p := producer(me, i)
				Eq(t, fmt.Sprintf("round %d: slot %d's data (PE %d fenced it before the slot)", round, i, p),
					data.Local()[1+i], slotData(p, i))
				skip[i] = true
				return true
			}
			// take consumes the indices one look returned; false ends the
			// loop (the failure is recorded).
			got := 0
			take := func(how string, err error, is ...int) bool {
				if !t.OK(how, err) {
					return false
				}
				for _, i := range is {
					if !consume(how, i) {
						return false
					}
					got++
				}
				return true
			}
		loop:
			for polls := 0; got < cnt; polls++ {
				switch mode {
				case "any-skip":
					i, err := shmem.WaitUntilAny(a, 1, cnt, skip, shmem.CmpNE, 0)
					if !take("WaitUntilAny", err, i) {
						break loop
					}
				case "any-reset":
					i, err := shmem.WaitUntilAnyVector(a, 1, cnt, nil, shmem.CmpEQ, vals)
					if !take("WaitUntilAnyVector", err, i) {
						break loop
					}
					a.Local()[1+i] = 0 // consumed: no longer satisfies
				case "some-skip":
					is, err := shmem.WaitUntilSome(a, 1, cnt, skip, shmem.CmpGT, 0)
					if err == nil && len(is) == 0 {
						t.Errorf("round %d: WaitUntilSome returned no index with %d slots left", round, cnt-got)
						break loop
					}
					if !take("WaitUntilSome", err, is...) {
						break loop
					}
				case "test-poll":
					var is []int
					var err error
					how := "TestSomeVector"
					if polls%2 == 0 {
						how = "TestAny"
						i, ok, terr := shmem.TestAny(a, 1, cnt, skip, shmem.CmpNE, 0)
						if ok {
							is = []int{i}
						} else if i != -1 {
							t.Errorf("round %d: TestAny returned (%d, false), want (-1, false)", round, i)
						}
						err = terr
					} else {
						is, err = shmem.TestSomeVector(a, 1, cnt, skip, shmem.CmpEQ, vals)
					}
					if !take(how, err, is...) {
						break loop
					}
					if len(is) == 0 {
						runtime.Gosched()
					}
				}
			}
			t.OK("producer", <-done)
			for i, c := range seen {
				if c != 1 {
					t.Errorf("round %d: slot %d seen %d times, want once", round, i, c)
				}
			}
			// Every slot consumed: the wait set left is empty.
			switch mode {
			case "any-skip":
				i, err := shmem.WaitUntilAny(a, 1, cnt, skip, shmem.CmpNE, 0)
				t.OK("WaitUntilAny", err)
				Eq(t, "WaitUntilAny with every slot skipped", i, -1)
			case "some-skip":
				is, err := shmem.WaitUntilSome(a, 1, cnt, skip, shmem.CmpGT, 0)
				t.OK("WaitUntilSome", err)
				Eq(t, "WaitUntilSome with every slot skipped: indices", len(is), 0)
			case "test-poll":
				ok, err := shmem.TestAll(a, 1, cnt, nil, shmem.CmpNE, 0)
				t.OK("TestAll", err)
				Eq(t, "TestAll after every slot arrived", ok, true)
				i, ok, err := shmem.TestAny(a, 1, cnt, skip, shmem.CmpNE, 0)
				t.OK("TestAny", err)
				Eq(t, "TestAny with every slot skipped", ok, false)
				Eq(t, "TestAny with every slot skipped: index", i, -1)
			}
			t.Must("BarrierAll", shmem.BarrierAll())
		}
	}
}
