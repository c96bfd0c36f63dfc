package lint

import (
	"go/ast"
	"go/token"
	"go/types"
	"strconv"
	"strings"

	"golang.org/x/tools/go/analysis"
)

// Determinism reports code in a core package (see core.go) that would make a
// simulated run depend on something other than its seed.
var Determinism = &analysis.Analyzer{
	Name: "determinism",
	Doc: `report nondeterminism in Floe's core packages

In consensus/..., logstore, clock and node/... (runtime subpackages and a few
named files excepted; see internal/lint/core.go) it reports: time.Now and the
other wall-clock and timer functions; go and select statements; channel sends,
receives, make(chan) and close; the global math/rand source; imports of
crypto/rand, os, net (net/netip is allowed) and syscall; and range over a map unless the loop carries
"//floe:unordered <reason>" on its line or the line before.`,
	Run: run,
}

// extraCore holds the -core flag: more packages to treat as core. Tests use
// it to check fixtures; a developer can use it to try the rule on a package.
var extraCore patternList

func init() {
	Determinism.Flags.Var(&extraCore, "core",
		"comma-separated import paths also treated as core (a trailing /... includes subpackages)")
}

// UnorderedDirective marks a map range whose order cannot reach an output.
// It must be followed by a reason.
const UnorderedDirective = "//floe:unordered"

// timeFuncs are the package time functions the core must not use, each with
// what to use instead.
var timeFuncs = map[string]string{
	"Now":       "read time through clock.Clock",
	"Since":     "measure intervals with clock.Clock.Monotonic",
	"Until":     "measure intervals with clock.Clock.Monotonic",
	"Sleep":     "schedule a callback through clock.Scheduler",
	"After":     "schedule a callback through clock.Scheduler",
	"AfterFunc": "schedule a callback through clock.Scheduler",
	"NewTimer":  "schedule a callback through clock.Scheduler",
	"NewTicker": "schedule a callback through clock.Scheduler",
	"Tick":      "schedule a callback through clock.Scheduler",
}

// randConstructors are the package-level math/rand functions that build a
// private generator instead of using the global source.
var randConstructors = map[string]bool{
	"New": true, "NewSource": true, "NewZipf": true, // math/rand
	"NewPCG": true, "NewChaCha8": true, // math/rand/v2
}

// unorderedIters are functions of package maps whose iterators visit a map in
// random order, just like ranging over it.
var unorderedIters = map[string]bool{"Keys": true, "Values": true, "All": true}

func run(pass *analysis.Pass) (any, error) {
	core, exempt := isCore(pass.Pkg.Path(), extraCore)
	if !core {
		return nil, nil
	}
	for _, f := range pass.Files {
		if fileExempt(pass.Fset.File(f.FileStart).Name(), exempt) {
			continue
		}
		c := &fileChecker{pass: pass, directives: unorderedDirectives(pass.Fset, f)}
		c.checkImports(f)
		ast.Inspect(f, c.visit)
	}
	return nil, nil
}

// fileChecker checks one file of a core package.
type fileChecker struct {
	pass *analysis.Pass
	// directives maps the line of each //floe:unordered comment to its
	// reason ("" when the reason is missing).
	directives map[int]string
}

func (c *fileChecker) checkImports(f *ast.File) {
	for _, spec := range f.Imports {
		p, err := strconv.Unquote(spec.Path.Value)
		if err != nil {
			continue
		}
		if hint, bad := forbiddenImport(p); bad {
			c.pass.Reportf(spec.Pos(), "import of %q in core package: %s", p, hint)
		}
	}
}

// forbiddenImport says whether a core package may not import p, and why.
func forbiddenImport(p string) (hint string, bad bool) {
	switch {
	case p == "crypto/rand":
		return "take randomness from a *rand.Rand handed in (the simulator seeds it)", true
	case p == "os" || strings.HasPrefix(p, "os/"):
		return "reach files through logstore.FS", true
	case p == "net/netip":
		return "", false // address values and their parsing: no sockets, no state
	case p == "net" || strings.HasPrefix(p, "net/"):
		return "reach peers through netx.Transport", true
	case p == "syscall":
		return "the core makes no system calls; the runtime does", true
	}
	return "", false
}

func (c *fileChecker) visit(n ast.Node) bool {
	switch n := n.(type) {
	case *ast.GoStmt:
		c.pass.Reportf(n.Pos(), "go statement in core package: the core is single-threaded; schedule work through clock.Scheduler or hand it to the runtime")
	case *ast.SelectStmt:
		c.pass.Reportf(n.Pos(), "select statement in core package: events come from the reactor, one at a time")
	case *ast.SendStmt:
		c.reportChan(n.Pos(), "channel send")
	case *ast.UnaryExpr:
		if n.Op == token.ARROW {
			c.reportChan(n.Pos(), "channel receive")
		}
	case *ast.CallExpr:
		c.checkBuiltin(n)
	case *ast.RangeStmt:
		c.checkRange(n)
	case *ast.Ident:
		c.checkIdent(n)
	}
	return true
}

func (c *fileChecker) reportChan(pos token.Pos, what string) {
	c.pass.Reportf(pos, "%s in core package: channels are control flow the simulator cannot order; use clock.Scheduler events", what)
}

// checkBuiltin reports make(chan ...) and close(ch).
func (c *fileChecker) checkBuiltin(call *ast.CallExpr) {
	id, ok := ast.Unparen(call.Fun).(*ast.Ident)
	if !ok || len(call.Args) == 0 {
		return
	}
	b, ok := c.pass.TypesInfo.Uses[id].(*types.Builtin)
	if !ok {
		return
	}
	switch b.Name() {
	case "make":
		if isChan(c.pass.TypesInfo.TypeOf(call.Args[0])) {
			c.reportChan(call.Pos(), "make(chan)")
		}
	case "close":
		if isChan(c.pass.TypesInfo.TypeOf(call.Args[0])) {
			c.reportChan(call.Pos(), "close of a channel")
		}
	}
}

func isChan(t types.Type) bool {
	if t == nil {
		return false
	}
	_, ok := t.Underlying().(*types.Chan)
	return ok
}

// checkIdent reports uses of forbidden functions of time and math/rand,
// whether called or only referred to (f := time.Now).
func (c *fileChecker) checkIdent(id *ast.Ident) {
	fn, ok := c.pass.TypesInfo.Uses[id].(*types.Func)
	if !ok || fn.Pkg() == nil {
		return
	}
	if sig, ok := fn.Type().(*types.Signature); !ok || sig.Recv() != nil {
		return // methods (on *rand.Rand, time.Time, ...) are fine
	}
	switch pkg := fn.Pkg().Path(); pkg {
	case "time":
		if hint, bad := timeFuncs[fn.Name()]; bad {
			c.pass.Reportf(id.Pos(), "time.%s in core package: %s", fn.Name(), hint)
		}
	case "math/rand", "math/rand/v2":
		if !randConstructors[fn.Name()] {
			c.pass.Reportf(id.Pos(), "%s.%s uses the global random source: take a *rand.Rand handed in (the simulator seeds it)", pkg, fn.Name())
		}
	}
}

// checkRange reports ranging over a channel, over a map, or over a maps
// iterator, unless a map loop is marked //floe:unordered with a reason.
func (c *fileChecker) checkRange(rs *ast.RangeStmt) {
	t := c.pass.TypesInfo.TypeOf(rs.X)
	if isChan(t) {
		c.reportChan(rs.Pos(), "range over a channel")
		return
	}
	what := ""
	if t != nil {
		if _, ok := t.Underlying().(*types.Map); ok {
			what = "range over a map"
		}
	}
	if name := c.mapsIter(rs.X); name != "" {
		what = "range over maps." + name
	}
	if what == "" || !bindsVars(rs) {
		return
	}
	line := c.pass.Fset.Position(rs.Pos()).Line
	reason, marked := c.directives[line]
	if !marked {
		reason, marked = c.directives[line-1]
	}
	switch {
	case !marked:
		c.pass.Reportf(rs.Pos(), "%s in core package visits entries in random order: sort the keys, or mark the loop %s <reason> if the order cannot reach an output", what, UnorderedDirective)
	case reason == "":
		c.pass.Reportf(rs.Pos(), "%s: %s needs a reason after it", what, UnorderedDirective)
	}
}

// mapsIter returns the name of the maps function called in x if its
// iterator is unordered (maps.Keys(m)), or "".
func (c *fileChecker) mapsIter(x ast.Expr) string {
	call, ok := ast.Unparen(x).(*ast.CallExpr)
	if !ok {
		return ""
	}
	sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
	if !ok {
		return ""
	}
	fn, ok := c.pass.TypesInfo.Uses[sel.Sel].(*types.Func)
	if !ok || fn.Pkg() == nil || fn.Pkg().Path() != "maps" || !unorderedIters[fn.Name()] {
		return ""
	}
	return fn.Name()
}

// bindsVars reports whether a range loop names a key or value. A loop that
// binds neither (for range m) runs len(m) times and cannot see the order.
func bindsVars(rs *ast.RangeStmt) bool {
	return !isBlank(rs.Key) || !isBlank(rs.Value)
}

func isBlank(e ast.Expr) bool {
	if e == nil {
		return true
	}
	id, ok := e.(*ast.Ident)
	return ok && id.Name == "_"
}

// unorderedDirectives finds the //floe:unordered comments of a file.
func unorderedDirectives(fset *token.FileSet, f *ast.File) map[int]string {
	dirs := map[int]string{}
	for _, group := range f.Comments {
		for _, cm := range group.List {
			rest, ok := strings.CutPrefix(cm.Text, UnorderedDirective)
			if !ok || (rest != "" && rest[0] != ' ' && rest[0] != '\t') {
				continue
			}
			dirs[fset.Position(cm.Slash).Line] = strings.TrimSpace(rest)
		}
	}
	return dirs
}

// patternList is a flag.Value holding comma-separated import path patterns.
type patternList []string

func (p *patternList) String() string { return strings.Join(*p, ",") }

func (p *patternList) Set(s string) error {
	*p = nil
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*p = append(*p, f)
		}
	}
	return nil
}
