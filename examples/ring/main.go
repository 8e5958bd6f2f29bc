// Command ring passes a payload around a ring of PEs with put-with-signal.
//
// PE 0 starts each round: it puts a payload of -n int64 values into PE 1's
// symmetric buffer with shmem.PutSignal, setting PE 1's signal word to the
// round number. Every other PE waits for that round with SignalWaitUntil,
// checks every element (each is stamped with the sender, the round and its
// index), stamps its own payload and forwards it to PE (me+1)%n. The round
// ends when the payload is back at PE 0, which reports the round-trip time.
//
// Only one payload is in flight at a time, so one receive buffer per PE is
// enough: a PE is sent round r+1 only after PE 0 received round r, which is
// after this PE checked round r and forwarded it.
//
// A PE that finds a bad element keeps forwarding (so the ring does not hang),
// counts the mismatch and prints the first one; at the end the counts are
// summed over all PEs and every PE exits 1 if any was found.
//
// Usage:
//
//	mpirun -np 4 ./ring [-rounds 1000] [-n 1024] [-warmup 10] [-corrupt PE]
//
// -corrupt PE makes that PE send one wrong element in the last round, to
// check that the receiver catches it and the job exits 1.
//
// Output, from PE 0:
//
//	ring: 4 PEs, 1000 rounds of 1024 int64 (8192 B): round trip 12.34 us, 3.08 us per hop, 2.65 GB/s per hop
package main

import (
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/goshmem/goshmem/shmem"
)

func main() {
	rounds := flag.Int("rounds", 1000, "timed rounds around the ring")
	n := flag.Int("n", 1024, "int64 elements in the payload")
	warmup := flag.Int("warmup", 10, "untimed rounds before the timed ones")
	corrupt := flag.Int("corrupt", -1, "PE that sends one wrong element in the last round (tests the checker)")
	flag.Parse()
	code, err := run(*rounds, *warmup, *n, *corrupt)
	if err != nil {
		fmt.Fprintln(os.Stderr, "ring:", err)
		os.Exit(1)
	}
	os.Exit(code)
}

// stamp is the value element i carries when PE from sends it in round r.
func stamp(from, r, i int) int64 {
	return int64(from)<<48 | int64(r)<<20 | int64(i)
}

func run(rounds, warmup, n, corrupt int) (int, error) {
	if rounds < 1 || warmup < 0 || n < 1 || n >= 1<<20 || rounds+warmup >= 1<<28 {
		return 1, fmt.Errorf("need -rounds >= 1, -warmup >= 0, 1 <= -n < 2^20 and rounds+warmup < 2^28")
	}
	if err := shmem.Init(); err != nil {
		return 1, err
	}
	me, npes := shmem.MyPE(), shmem.NPEs()
	next, prev := (me+1)%npes, (me-1+npes)%npes

	buf, err := shmem.Alloc[int64](n)
	if err != nil {
		return 1, err
	}
	sig, err := shmem.Alloc[uint64](1)
	if err != nil {
		return 1, err
	}
	bad, err := shmem.Alloc[int64](1)
	if err != nil {
		return 1, err
	}

	out := make([]int64, n)
	in := buf.Local()
	var mismatches int64

	// recv waits for round r from prev and checks every element.
	recv := func(r int) error {
		got, err := shmem.SignalWaitUntil(sig, 0, shmem.CmpGE, uint64(r))
		if err != nil {
			return err
		}
		if got != uint64(r) {
			if mismatches == 0 {
				fmt.Fprintf(os.Stderr, "ring: PE %d: round %d: signal is %d, want %d\n", me, r, got, r)
			}
			mismatches++
		}
		for i, v := range in {
			if want := stamp(prev, r, i); v != want {
				if mismatches == 0 {
					fmt.Fprintf(os.Stderr, "ring: PE %d: round %d: element %d from PE %d is %#x, want %#x\n",
						me, r, i, prev, v, want)
				}
				mismatches++
			}
		}
		return nil
	}
	// send stamps this PE's payload for round r and puts it to next.
	send := func(r int) error {
		for i := range out {
			out[i] = stamp(me, r, i)
		}
		if me == corrupt && r == warmup+rounds {
			out[n-1]++
		}
		return shmem.PutSignal(buf, 0, out, sig, 0, uint64(r), shmem.SignalSet, next)
	}

	if err := shmem.BarrierAll(); err != nil {
		return 1, err
	}
	var start time.Time
	for r := 1; r <= warmup+rounds; r++ {
		if r == warmup+1 {
			start = time.Now()
		}
		if me == 0 {
			if err := send(r); err != nil {
				return 1, err
			}
			if err := recv(r); err != nil {
				return 1, err
			}
			continue
		}
		if err := recv(r); err != nil {
			return 1, err
		}
		if err := send(r); err != nil {
			return 1, err
		}
	}
	elapsed := time.Since(start)

	// Sum the mismatch counts over all PEs, so every PE exits the same way.
	bad.Local()[0] = mismatches
	if err := shmem.Reduce(shmem.TeamWorld, shmem.OpSum, bad, bad, 1); err != nil {
		return 1, err
	}
	total := bad.Local()[0]
	if me == 0 {
		rt := elapsed / time.Duration(rounds)
		hop := rt / time.Duration(npes)
		bytes := n * 8
		fmt.Printf("ring: %d PEs, %d rounds of %d int64 (%d B): round trip %.2f us, %.2f us per hop, %.2f GB/s per hop\n",
			npes, rounds, n, bytes, us(rt), us(hop), float64(bytes)/hop.Seconds()/1e9)
		if total != 0 {
			fmt.Printf("ring: FAILED: %d mismatched elements or signals\n", total)
		}
	}
	for _, f := range []func() error{buf.Free, sig.Free, bad.Free} {
		if err := f(); err != nil {
			return 1, err
		}
	}
	if err := shmem.Finalize(); err != nil {
		return 1, err
	}
	if total != 0 {
		return 1, nil
	}
	return 0, nil
}

func us(d time.Duration) float64 { return float64(d.Nanoseconds()) / 1e3 }
