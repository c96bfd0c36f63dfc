//go:build floe_bugs

package controller

import (
	"flag"
	"fmt"
	"testing"

	"github.com/floe-broker/floe/internal/plant"
	"pgregory.net/rapid"
)

// TestPlantedBugBalancerLoadFlapsModel: with the load goal's hysteresis
// removed, the naive model's checks (balance_load_test.go) find a move
// reversed or a round that raises the potential.
func TestPlantedBugBalancerLoadFlapsModel(t *testing.T) {
	plant.Reset()
	plant.Set(plant.BalancerLoadFlaps)
	defer plant.Reset()
	if err := flag.Set("rapid.nofailfile", "true"); err != nil { // an expected failure leaves no file
		t.Fatal(err)
	}
	rec := &recordTB{T: t}
	rapid.Check(rec, func(rt *rapid.T) {
		m := genBalance(rt, true, []string{""})
		genLoad(rt, m)
		m.balanceLoad(rt)
	})
	if !rec.failed {
		t.Fatalf("planted bug %s: the model found no flapping", plant.BalancerLoadFlaps)
	}
	t.Logf("planted bug %s caught:\n%s", plant.BalancerLoadFlaps, rec.msg)
}

// recordTB takes a failure instead of failing the test.
type recordTB struct {
	*testing.T
	failed bool
	msg    string
}

func (r *recordTB) Errorf(f string, a ...any) { r.failed, r.msg = true, fmt.Sprintf(f, a...) }
func (r *recordTB) Error(a ...any)            { r.failed, r.msg = true, fmt.Sprint(a...) }
func (r *recordTB) Fatalf(f string, a ...any) { r.Errorf(f, a...) }
func (r *recordTB) Fatal(a ...any)            { r.Error(a...) }
func (r *recordTB) Fail()                     { r.failed = true }
func (r *recordTB) FailNow()                  { r.failed = true }
func (r *recordTB) Failed() bool              { return r.failed }
