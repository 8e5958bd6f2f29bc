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

// Built with -tags nostream: no register rows (they put on a stream).
func (d *dev) registerRows() error {
	if d.me == 0 {
		fmt.Fprintln(os.Stderr, "# register rows skipped: goshmem-perf built with -tags nostream")
	}
	return nil
}

// Built with -tags nostream: no prep rows (they time stream barriers).
func (d *dev) prepRows() error {
	if d.me == 0 {
		fmt.Fprintln(os.Stderr, "# stream_in_prep rows skipped: goshmem-perf built with -tags nostream")
	}
	return nil
}
