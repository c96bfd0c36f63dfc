package sim

import (
	"fmt"
	"strings"
	"testing"
)

func TestSimOne(t *testing.T) {
	for _, seed := range testSeeds(1) {
		res := Run(ChooseOptions(seed))
		t.Log(res.Summary())
		if res.Failed() {
			t.Log(strings.Join(res.TraceTail, "\n"))
			t.Fail()
		}
	}
}

func TestSimMany(t *testing.T) {
	for _, seed := range testSeeds(40) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Parallel()
			res := Run(ChooseOptions(seed))
			if res.Failed() {
				t.Error(res.Summary())
			}
		})
	}
}
