// Package plant is not core.
package plant

import "time"

var planted = map[string]bool{}

func names() (out []string) {
	for k := range planted {
		out = append(out, k)
	}
	_ = time.Now()
	return out
}
