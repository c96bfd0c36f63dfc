// Package quorum is core because consensus/... is.
package quorum

func majority(votes map[uint64]bool) int {
	n := 0
	for _, v := range votes { // want `range over a map in core package`
		if v {
			n++
		}
	}
	return n
}
