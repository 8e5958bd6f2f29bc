module github.com/goshmem/goshmem/scripts/modcheck

go 1.26

require golang.org/x/mod v0.40.0
