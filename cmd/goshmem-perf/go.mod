module github.com/goshmem/goshmem/cmd/goshmem-perf

go 1.26

require (
	github.com/goshmem/goshmem v0.0.0-00010101000000-000000000000
	github.com/goshmem/goshmem/gpulib v0.0.0-00010101000000-000000000000
	github.com/stretchr/testify v1.12.1
	golang.org/x/sys v0.47.0
	gonum.org/v1/plot v0.17.0
)

require (
	codeberg.org/go-fonts/liberation v0.5.0 // indirect
	codeberg.org/go-latex/latex v0.2.0 // indirect
	codeberg.org/go-pdf/fpdf v0.11.1 // indirect
	git.sr.ht/~sbinet/gg v0.7.0 // indirect
	github.com/ajstarks/svgo v0.0.0-20211024235047-1546f124cd8b // indirect
	github.com/golang/freetype v0.0.0-20170609003504-e2365dfdc4a0 // indirect
	go.yaml.in/yaml/v3 v3.0.5 // indirect
	golang.org/x/image v0.30.0 // indirect
	golang.org/x/text v0.32.0 // indirect
)

replace (
	github.com/goshmem/goshmem => ../..
	github.com/goshmem/goshmem/gpulib => ../../gpulib
)
