package group

import "unicode/utf16"

// OffsetsTopic is the internal topic holding committed offsets and group
// metadata.
const OffsetsTopic = "__consumer_offsets"

// PartitionFor returns the partition of __consumer_offsets (of n) that
// holds a group, exactly as Kafka computes it — abs(javaHashCode(group)) % n
// with Kafka's abs mapping MinInt32 to 0 — so tools that compute it
// themselves agree with the broker. n must be positive.
func PartitionFor(group string, n int32) int32 {
	h := javaStringHash(group)
	if h == -1<<31 {
		h = 0
	} else if h < 0 {
		h = -h
	}
	return h % n
}

// javaStringHash is Java's String.hashCode: s[0]*31^(k-1) + ... + s[k-1]
// over the UTF-16 code units, in wrapping 32-bit arithmetic.
func javaStringHash(s string) int32 {
	var h int32
	for _, u := range utf16.Encode([]rune(s)) {
		h = 31*h + int32(u)
	}
	return h
}
