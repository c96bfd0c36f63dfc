package consensus

import "time"

func tick() time.Time { return time.Now() } // want `time.Now in core package`
