// Command hello is the smallest goshmem program: every PE puts its number
// into the next PE's symmetric array, and each prints what it received.
//
//	mpirun -np 4 ./hello
package main

import (
	"fmt"
	"os"

	"github.com/goshmem/goshmem/shmem"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "hello:", err)
		os.Exit(1)
	}
}

func run() error {
	if err := shmem.Init(); err != nil {
		return err
	}
	me, n := shmem.MyPE(), shmem.NPEs()
	box, err := shmem.Alloc[int64](1)
	if err != nil {
		return err
	}
	next := (me + 1) % n
	if err := shmem.P(box, 0, int64(me), next); err != nil {
		return err
	}
	if err := shmem.BarrierAll(); err != nil {
		return err
	}
	got := box.Local()[0]
	want := int64((me - 1 + n) % n)
	fmt.Printf("hello from PE %d of %d: PE %d said hi\n", me, n, got)
	if got != want {
		return fmt.Errorf("PE %d: got %d from the previous PE, want %d", me, got, want)
	}
	if err := box.Free(); err != nil {
		return err
	}
	return shmem.Finalize()
}
