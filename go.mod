module github.com/goshmem/goshmem

go 1.26

require (
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.47.0
)

require go.yaml.in/yaml/v3 v3.0.5 // indirect
