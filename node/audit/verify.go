package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
)

// Break is the first place a partition's chain does not hold.
type Break struct {
	Partition int32
	Offset    int64
	// Why says what is wrong: the link does not match the record before,
	// the record does not decode, or an offset is missing.
	Why string
}

func (b *Break) Error() string {
	return fmt.Sprintf("chain broken at partition %d offset %d: %s", b.Partition, b.Offset, b.Why)
}

// Verifier checks the chains of a topic's partitions as their records are
// read in offset order. A partition's first record read is trusted as the
// chain's start unless it is at offset 0, where its link must be Genesis
// (retention may have removed what came before a later first record).
type Verifier struct {
	heads   map[int32]head
	records int
}

type head struct {
	hash   [sha256.Size]byte
	offset int64
	broken bool
}

// NewVerifier returns a verifier that has seen nothing.
func NewVerifier() *Verifier { return &Verifier{heads: map[int32]head{}} }

// Next checks the record at offset of partition and returns the first break
// it finds in that partition (after one, the partition is not checked any
// further: one break is reported once).
func (v *Verifier) Next(partition int32, offset int64, value []byte) *Break {
	h, seen := v.heads[partition]
	if h.broken {
		return nil
	}
	v.records++
	fail := func(why string) *Break {
		v.heads[partition] = head{broken: true}
		return &Break{Partition: partition, Offset: offset, Why: why}
	}
	rec, err := Unmarshal(value)
	if err != nil {
		return fail(err.Error())
	}
	link, err := hex.DecodeString(rec.Unmapped.Floe.PrevSHA256)
	if err != nil || len(link) != sha256.Size {
		return fail(fmt.Sprintf("prev_sha256 %q is not a SHA-256 in hex", rec.Unmapped.Floe.PrevSHA256))
	}
	var want [sha256.Size]byte
	switch {
	case seen && offset != h.offset+1:
		return fail(fmt.Sprintf("offsets %d to %d are missing", h.offset+1, offset-1))
	case seen:
		want = h.hash
	case offset == 0:
		want = Genesis
	default:
		copy(want[:], link)
	}
	if string(link) != string(want[:]) {
		what := fmt.Sprintf("the record at offset %d hashes to %x", offset-1, want)
		if !seen {
			what = "a partition's first record links to " + hex.EncodeToString(want[:])
		}
		return fail(fmt.Sprintf("prev_sha256 is %x, but %s (a record was changed, removed or inserted)", link, what))
	}
	v.heads[partition] = head{hash: Hash(value), offset: offset}
	return nil
}

// Records is how many records were checked.
func (v *Verifier) Records() int { return v.records }

// Heads returns, per partition whose chain held, the offset and hash of its
// last record, by partition.
func (v *Verifier) Heads() []Head {
	var out []Head
	for p, h := range v.heads { //floe:unordered sorted below
		if !h.broken {
			out = append(out, Head{Partition: p, Offset: h.offset, SHA256: hex.EncodeToString(h.hash[:])})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Partition < out[j].Partition })
	return out
}

// Head is a partition's last verified record.
type Head struct {
	Partition int32
	Offset    int64
	SHA256    string
}
