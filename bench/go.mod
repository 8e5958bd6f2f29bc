module github.com/goshmem/goshmem/bench

go 1.26
