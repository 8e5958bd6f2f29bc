//go:build nostream

package main

// Built with -tags nostream (a tree without the stream API): no stream tests.
func streamTests() []test { return nil }
