// Command uidpe is one PE of a job started without a launcher through the
// unique-ID API (shmem.NewUniqueID, shmem.WithUniqueID), for
// tests/integration's uid tests. The test starts the processes:
//
//	uidpe -rank R -npes N -id TEXT   join the job of the ID's text
//	uidpe -rank R -npes N -make-id   make the ID here, print "uidpe: id TEXT", then join
//
// Every PE puts its rank into the next PE's array, checks what it got
// and a sum over all PEs, and prints "uidpe: PE R of N: ok". With -abort,
// PE 1 calls GlobalExit(5) while the others wait in a barrier.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/goshmem/goshmem/shmem"
)

func main() {
	rank := flag.Int("rank", -1, "this PE's rank")
	npes := flag.Int("npes", 0, "the number of PEs")
	idText := flag.String("id", "", "the unique ID's text")
	makeID := flag.Bool("make-id", false, "make the unique ID in this process and print it")
	abort := flag.Bool("abort", false, "PE 1 calls GlobalExit(5) while the others wait")
	flag.Parse()
	if err := run(*rank, *npes, *idText, *makeID, *abort); err != nil {
		fmt.Fprintf(os.Stderr, "uidpe: PE %d: %v\n", *rank, err)
		os.Exit(1)
	}
}

func run(rank, npes int, idText string, makeID, abort bool) error {
	var id shmem.UniqueID
	if makeID {
		var err error
		if id, err = shmem.NewUniqueID(); err != nil {
			return err
		}
		text, err := id.MarshalText()
		if err != nil {
			return err
		}
		fmt.Printf("uidpe: id %s\n", text)
	} else if err := id.UnmarshalText([]byte(idText)); err != nil {
		return err
	}
	if err := shmem.Init(shmem.WithUniqueID(id, rank, npes), shmem.WithSymmetricSize(16<<20)); err != nil {
		return err
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	if me != rank || n != npes {
		return fmt.Errorf("MyPE %d, NPEs %d; want %d, %d", me, n, rank, npes)
	}
	if abort {
		if me == 1 {
			shmem.GlobalExit(5, "uidpe: PE 1 aborts the job")
		}
		_ = shmem.BarrierAll() // never completes: PE 1 is gone
		return fmt.Errorf("the barrier returned after PE 1's GlobalExit")
	}
	box, err := shmem.Alloc[int64](1)
	if err != nil {
		return err
	}
	if err := shmem.P(box, 0, int64(me), (me+1)%n); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	if got, want := box.Local()[0], int64((me-1+n)%n); got != want {
		return fmt.Errorf("got %d from the previous PE, want %d", got, want)
	}
	if err := box.Free(); err != nil {
		return err
	}
	if err := shmem.Finalize(); err != nil {
		return err
	}
	fmt.Printf("uidpe: PE %d of %d: ok\n", me, n)
	return nil
}
