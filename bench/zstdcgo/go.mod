module github.com/pbsdirect/pbsdirect/bench/zstdcgo

go 1.26.8

require (
	github.com/DataDog/zstd v1.5.7
	github.com/klauspost/compress v1.20.4
)
