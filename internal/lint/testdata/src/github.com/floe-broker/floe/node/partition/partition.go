package partition

import "math/rand"

func pick() int { return rand.Intn(3) } // want `math/rand.Intn uses the global random source`
