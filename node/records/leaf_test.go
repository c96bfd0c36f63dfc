package records

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestLeafPackage: records imports nothing from Floe (its tests neither),
// so that logstore and node can both use it: it is the one copy of the
// record-batch format.
func TestLeafPackage(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no Go files: %v", err)
	}
	fset := token.NewFileSet()
	for _, f := range files {
		ast, err := parser.ParseFile(fset, f, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, spec := range ast.Imports {
			p, _ := strconv.Unquote(spec.Path.Value)
			if strings.HasPrefix(p, "github.com/floe-broker/floe/") {
				t.Errorf("%s imports %s: records must stay a leaf package", f, p)
			}
		}
	}
}
