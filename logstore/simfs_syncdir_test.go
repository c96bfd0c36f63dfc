package logstore

import (
	"fmt"
	"maps"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// TestSimFSSyncDirAgainstModel: a directory's entries after a crash that
// keeps nothing pending are exactly its entries at the last SyncDir, each
// name holding the file it held then. The model is a copy of the whole
// listing at every SyncDir; SimFS replays its pending operations instead.
func TestSimFSSyncDirAgainstModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		fsys := newSim(rapid.Int64().Draw(rt, "seed"))
		must(rt, fsys.MkdirAll("d"))
		must(rt, fsys.SyncDir("."))
		live := map[string]string{} // name -> the file's content (its birth name)
		var durable map[string]string
		births := 0
		steps := rapid.IntRange(1, 60).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			names := slices.Sorted(maps.Keys(live))
			switch op := rapid.IntRange(0, 3).Draw(rt, "op"); {
			case op == 0 || len(names) == 0:
				name := fmt.Sprintf("f%d", births)
				for births++; live[name] != ""; births++ {
					name = fmt.Sprintf("f%d", births) // a rename took it
				}
				f, err := fsys.Create("d/" + name)
				must(rt, err)
				_, err = f.Write([]byte(name))
				must(rt, err)
				must(rt, f.Sync())
				must(rt, f.Close())
				live[name] = name
			case op == 1:
				name := rapid.SampledFrom(names).Draw(rt, "remove")
				must(rt, fsys.Remove("d/"+name))
				delete(live, name)
			case op == 2:
				from := rapid.SampledFrom(names).Draw(rt, "from")
				to := fmt.Sprintf("f%d", rapid.IntRange(0, births).Draw(rt, "to"))
				must(rt, fsys.Rename("d/"+from, "d/"+to))
				if from != to {
					live[to] = live[from]
					delete(live, from)
				}
			default:
				must(rt, fsys.SyncDir("d"))
				durable = maps.Clone(live)
			}
		}
		fsys.CrashWith(CrashLoseAll)
		got, err := fsys.List("d")
		must(rt, err)
		if want := slices.Sorted(maps.Keys(durable)); !slices.Equal(got, want) {
			rt.Fatalf("after the crash d holds %v, at the last SyncDir it held %v", got, want)
		}
		for _, name := range got {
			b, err := fsys.ReadDurable("d/" + name)
			must(rt, err)
			if string(b) != durable[name] {
				rt.Fatalf("d/%s holds %q, at the last SyncDir it held %q", name, b, durable[name])
			}
		}
	})
}
