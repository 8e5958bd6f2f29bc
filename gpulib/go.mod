module github.com/goshmem/goshmem/gpulib

go 1.26

require (
	github.com/goshmem/goshmem v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect

replace github.com/goshmem/goshmem => ../
