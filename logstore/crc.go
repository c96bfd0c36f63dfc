package logstore

import "hash/crc32"

// castagnoli is the CRC-32C table. BenchmarkCRC32C compares the standard
// library with github.com/klauspost/crc32 (a fork whose AVX-512 path speeds
// up the IEEE polynomial): for CRC-32C both use the same SSE4.2 CRC32
// instruction and measure the same here, so we keep the standard library
// and one dependency fewer. Figures are in docs/benchmarks.md.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func crc32c(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

func crc32cUpdate(crc uint32, b []byte) uint32 { return crc32.Update(crc, castagnoli, b) }
