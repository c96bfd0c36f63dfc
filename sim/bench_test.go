package sim

import "testing"

// BenchmarkSeeds runs TestSim's seeds 1..20 one after another per
// iteration: the simulator's cost per seed (docs/testing.md, Simulator).
//
//	go test ./sim -run '^$' -bench BenchmarkSeeds -benchtime 1x -cpuprofile cpu.out
func BenchmarkSeeds(b *testing.B) {
	for b.Loop() {
		for seed := int64(1); seed <= 20; seed++ {
			if res := Run(ChooseOptions(seed)); res.Failed() {
				b.Fatalf("seed %d failed:\n%s", seed, res.Summary())
			}
		}
	}
}
