package consensus

import (
	"testing"
	"time"
)

// Test files are exempt.
func TestTick(t *testing.T) {
	go func() {}()
	_ = time.Now()
}
