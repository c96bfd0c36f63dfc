package clock

import "time"

func simNow() time.Time { return time.Now() } // want `time.Now in core package`
