// real.go reads the OS clock on everyone's behalf: exempt.
package clock

import "time"

func now() time.Time { return time.Now() }
