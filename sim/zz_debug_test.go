package sim

import (
	"os"
	"strings"
	"testing"
)

func TestZZDebug(t *testing.T) {
	o := ChooseOptions(seedOnly)
	o.TraceKeep = -1
	res := Run(o)
	os.WriteFile("/tmp/share-trace.txt", []byte(strings.Join(res.Trace, "\n")), 0o644)
	t.Log(res.Summary())
}
