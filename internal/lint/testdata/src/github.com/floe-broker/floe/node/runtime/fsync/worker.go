// Package fsync is under node/runtime, so it is runtime too.
package fsync

import "time"

func loop(work chan func()) {
	for {
		select {
		case fn := <-work:
			fn()
		case <-time.After(time.Second):
		}
	}
}
