module github.com/goshmem/goshmem/tests/gpu

go 1.26

require (
	github.com/goshmem/goshmem v0.0.0-00010101000000-000000000000
	github.com/goshmem/goshmem/gpulib v0.0.0-00010101000000-000000000000
)

require golang.org/x/sys v0.47.0 // indirect

replace (
	github.com/goshmem/goshmem => ../..
	github.com/goshmem/goshmem/gpulib => ../../gpulib
)
