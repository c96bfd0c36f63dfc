package check

import (
	"fmt"
	"testing"
)

func TestFindCycle(t *testing.T) {
	for _, c := range []struct {
		edges [][]int
		want  string
	}{
		{[][]int{{1}, {2}, {}}, "[]"},
		{[][]int{{1, 2}, {2}, {}}, "[]"},
		{[][]int{{1}, {2}, {0}}, "[0 1 2]"},
		{[][]int{{1}, {2}, {1}}, "[1 2]"},
		{[][]int{{}, {1}}, "[1]"},
	} {
		if got := fmt.Sprint(findCycle(c.edges)); got != c.want {
			t.Errorf("findCycle(%v) = %s, want %s", c.edges, got, c.want)
		}
	}
}
