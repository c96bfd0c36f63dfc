package main

import (
	"strings"
	"testing"
	"time"
)

// --raft-election-timeout: a value Raft cannot use is refused with a
// message naming the flag; whole ticks in range are taken.
func TestCheckElectionTimeout(t *testing.T) {
	for _, d := range []time.Duration{100 * time.Millisecond, 2 * time.Minute, 175 * time.Millisecond} {
		if err := checkElectionTimeout(d); err == nil || !strings.Contains(err.Error(), "--raft-election-timeout") {
			t.Errorf("%v: err = %v, want one naming the flag", d, err)
		}
	}
	for _, d := range []time.Duration{150 * time.Millisecond, 500 * time.Millisecond, time.Second, time.Minute} {
		if err := checkElectionTimeout(d); err != nil {
			t.Errorf("%v: %v", d, err)
		}
	}
}
