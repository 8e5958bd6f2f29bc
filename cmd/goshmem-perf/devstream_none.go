//go:build nostream

package main

import (
	"fmt"
	"os"
)

// Built with -tags nostream (a tree without the stream API): no on-stream rows.
func (d *dev) streamRows() error {
	if d.me == 0 {
		fmt.Fprintln(os.Stderr, "# onstream rows skipped: goshmem-perf built with -tags nostream")
	}
	return nil
}
