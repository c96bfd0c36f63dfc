// Package bad holds one of every construct the determinism lint forbids in a
// core package. The test marks it core with -core.
package bad

import (
	crand "crypto/rand" // want `import of "crypto/rand" in core package`
	"maps"
	"math/rand"
	randv2 "math/rand/v2"
	"net"     // want `import of "net" in core package`
	"net/url" // want `import of "net/url" in core package`
	"os"      // want `import of "os" in core package`
	"os/exec" // want `import of "os/exec" in core package`
	"syscall" // want `import of "syscall" in core package`
	"time"
)

var (
	_ = crand.Reader
	_ = net.IPv4len
	_ = url.Parse
	_ = os.Getpid
	_ = exec.Command
	_ = syscall.Getpid
)

func wallClock() {
	start := time.Now()          // want `time.Now in core package`
	_ = time.Since(start)        // want `time.Since in core package`
	_ = time.Until(start)        // want `time.Until in core package`
	time.Sleep(time.Second)      // want `time.Sleep in core package`
	<-time.After(time.Second)    // want `time.After in core package` `channel receive in core package`
	time.AfterFunc(0, func() {}) // want `time.AfterFunc in core package`
	_ = time.NewTimer(0)         // want `time.NewTimer in core package`
	_ = time.NewTicker(1)        // want `time.NewTicker in core package`
	_ = time.Tick(1)             // want `time.Tick in core package`
	now := time.Now              // want `time.Now in core package`
	_ = now
}

func goroutinesAndChannels() {
	ch := make(chan int, 1) // want `make\(chan\) in core package`
	go func() {}()          // want `go statement in core package`
	ch <- 1                 // want `channel send in core package`
	_ = <-ch                // want `channel receive in core package`
	select {                // want `select statement in core package`
	default:
	}
	for range ch { // want `range over a channel in core package`
	}
	close(ch) // want `close of a channel in core package`
}

func globalRand() {
	_ = rand.Intn(10)                  // want `math/rand.Intn uses the global random source`
	_ = rand.Float64()                 // want `math/rand.Float64 uses the global random source`
	rand.Seed(1)                       // want `math/rand.Seed uses the global random source`
	rand.Shuffle(2, func(i, j int) {}) // want `math/rand.Shuffle uses the global random source`
	_ = randv2.IntN(10)                // want `math/rand/v2.IntN uses the global random source`
	_ = randv2.N(10)                   // want `math/rand/v2.N uses the global random source`
	intn := rand.Int63                 // want `math/rand.Int63 uses the global random source`
	_ = intn
}

func mapOrder(m map[string]int) []string {
	var out []string
	for k := range m { // want `range over a map in core package visits entries in random order`
		out = append(out, k)
	}
	for _, v := range m { // want `range over a map in core package`
		_ = v
	}
	//floe:unordered
	for k := range m { // want `range over a map: //floe:unordered needs a reason`
		_ = k
	}
	for k := range maps.Keys(m) { // want `range over maps.Keys in core package`
		out = append(out, k)
	}
	for k, v := range maps.All(m) { // want `range over maps.All in core package`
		_, _ = k, v
	}
	//floe:unordered sets are order-free, but this comment is too far away

	for k := range m { // want `range over a map in core package`
		_ = k
	}
	return out
}
