//go:build nostream

package main

// Built with -tags nostream (a tree without the stream API): no
// RegisterDevice or heap growth tests, which move data on streams.
func interopTests() []test { return nil }
