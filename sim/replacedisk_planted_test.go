//go:build floe_bugs

package sim

import (
	"testing"

	"github.com/floe-broker/floe/internal/plant"
)

// TestPlantedBugLostDiskFenceOff: with the disk-loss replacement fault on,
// a broker restarted on a new disk that opens its replicas without the
// lost-log fence (node/disk.go) is caught by the checkers
// (acknowledged-entries-unfenced at its first look, or an election that
// loses a committed entry).
//
//	go test -tags floe_bugs -run PlantedBugLostDisk ./sim -v
func TestPlantedBugLostDiskFenceOff(t *testing.T) {
	catchPlantedWith(t, plant.LostDiskFenceOff, Options.WithReplaceDisk)
}
