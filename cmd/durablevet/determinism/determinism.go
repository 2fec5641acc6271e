// Package determinism provides an analysis.Analyzer that reports code which
// would make a durable orchestration non-deterministic on replay.
//
// An orchestration is any function, declared or literal, with a parameter of
// type *durable.OrchestrationContext (package
// github.com/duradyn/duradyn/durable). The runtime replays its code from the
// start on every turn, so the code must take the same path each time it runs.
// Inside an orchestration, and inside the functions of the same package that it
// calls statically (directly or through other such functions), the analyzer
// reports:
//
//   - go statements (use durable.Go);
//   - select statements (use durable.Race or durable.WaitAny);
//   - channels: make(chan ...), sends, receives and range over a channel (use
//     futures);
//   - calls of time.Now, time.Sleep, time.After, time.AfterFunc, time.Tick,
//     time.NewTimer, time.NewTicker, time.Since and time.Until (use ctx.Now,
//     ctx.Sleep and ctx.CreateTimer);
//   - package-level functions of math/rand and math/rand/v2, and anything
//     package-level of crypto/rand (use ctx.NewGUID or pass randomness in as
//     input);
//   - range over a map, or over maps.All, maps.Keys or maps.Values of a map
//     (range over sorted keys).
//
// Calls are not followed into other packages, through interfaces or through
// function values. Function literals written inside an orchestration are
// checked as part of it. The durable package itself, and the internal
// packages below it, are not checked: they implement the deterministic
// primitives with the very constructs the analyzer reports.
//
// A comment //durablevet:ignore on the line of a report, or alone on the line
// above it, suppresses that report. On the line of a call of a helper it also
// stops the analyzer from following the call.
package determinism

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"path/filepath"
	"strings"

	"golang.org/x/tools/go/analysis"
	"golang.org/x/tools/go/analysis/passes/inspect"
	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"
)

// DurablePath is the import path of the package that declares
// OrchestrationContext.
const DurablePath = "github.com/duradyn/duradyn/durable"

// IgnoreDirective is the comment that suppresses a report on its own line, or
// on the next line when the comment stands alone on its line.
const IgnoreDirective = "//durablevet:ignore"

// Analyzer reports non-deterministic constructs in durable orchestrations.
var Analyzer = &analysis.Analyzer{
	Name:     "determinism",
	Doc:      doc,
	Requires: []*analysis.Analyzer{inspect.Analyzer},
	Run:      run,
}

const doc = `report non-deterministic code in durable orchestrations

Inside functions with a *durable.OrchestrationContext parameter, and inside
the same-package functions they call, report go and select statements,
channel operations, wall-clock time and timers from package time, math/rand,
math/rand/v2 and crypto/rand, and range over maps. A //durablevet:ignore
comment on the line, or alone on the line above, suppresses a report.`

// Rule categories, set as the Category of each diagnostic.
const (
	ruleGo      = "go"
	ruleSelect  = "select"
	ruleChannel = "channel"
	ruleTime    = "time"
	ruleRand    = "rand"
	ruleMap     = "maprange"
)

// timeFuncs maps the package time functions that read the wall clock or
// start runtime timers to the replacement named in the report.
var timeFuncs = map[string]string{
	"Now":       "use ctx.Now()",
	"Sleep":     "use ctx.Sleep(d)",
	"After":     "use ctx.CreateTimer(d)",
	"AfterFunc": "use ctx.CreateTimer(d) or ctx.Sleep(d) in durable.Go",
	"NewTimer":  "use ctx.CreateTimer(d)",
	"Tick":      "use ctx.CreateTimer(d) in a loop",
	"NewTicker": "use ctx.CreateTimer(d) in a loop",
	"Since":     "use ctx.Now().Sub(t)",
	"Until":     "use t.Sub(ctx.Now())",
}

// randAdvice is the replacement named for every source of randomness.
const randAdvice = "use ctx.NewGUID or pass randomness in as input"

// mapsIterators are the functions of package maps whose iterators yield in
// map order.
var mapsIterators = map[string]bool{"All": true, "Keys": true, "Values": true}

// checker holds the state of one pass.
type checker struct {
	pass *analysis.Pass
	// decls maps each function and method declared in the package to its
	// declaration, to follow static calls.
	decls map[*types.Func]*ast.FuncDecl
	// visited holds the bodies already queued for checking.
	visited map[*ast.BlockStmt]bool
	// queue holds the bodies still to check.
	queue []item
	// ignored holds, per file name, the lines a directive suppresses.
	ignored map[string]map[int]bool
	// inSelect holds the channel operations that are the communications of
	// select cases: the select is reported, not each of them.
	inSelect map[ast.Node]bool
	// reported holds the reports made, so a node reached twice is reported
	// once.
	reported map[token.Pos]map[string]bool
}

// item is a function body to check.
type item struct {
	body *ast.BlockStmt
	// via is empty for an orchestration; for a helper it names the
	// orchestration the helper was reached from.
	via string
}

func run(pass *analysis.Pass) (any, error) {
	if p := pass.Pkg.Path(); p == DurablePath || strings.HasPrefix(p, DurablePath+"/internal/") {
		return nil, nil
	}
	c := &checker{
		pass:     pass,
		decls:    make(map[*types.Func]*ast.FuncDecl),
		visited:  make(map[*ast.BlockStmt]bool),
		ignored:  make(map[string]map[int]bool),
		inSelect: make(map[ast.Node]bool),
		reported: make(map[token.Pos]map[string]bool),
	}
	c.readDirectives()

	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	var roots []item
	insp.Preorder([]ast.Node{(*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)}, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.FuncDecl:
			fn, _ := pass.TypesInfo.Defs[n.Name].(*types.Func)
			if fn == nil {
				return
			}
			c.decls[fn] = n
			if n.Body != nil && hasContextParam(fn.Signature()) {
				roots = append(roots, item{body: n.Body})
			}
		case *ast.FuncLit:
			if sig, ok := pass.TypesInfo.TypeOf(n).(*types.Signature); ok && hasContextParam(sig) {
				roots = append(roots, item{body: n.Body})
			}
		}
	})
	// Every orchestration is marked before any is checked, so one that
	// another calls is reported as itself rather than as a helper.
	for _, r := range roots {
		c.visited[r.body] = true
	}
	c.queue = roots
	for len(c.queue) > 0 {
		it := c.queue[0]
		c.queue = c.queue[1:]
		c.check(it)
	}
	return nil, nil
}

// hasContextParam reports whether sig has a parameter of type
// *durable.OrchestrationContext.
func hasContextParam(sig *types.Signature) bool {
	params := sig.Params()
	for i := range params.Len() {
		if isContextPointer(params.At(i).Type()) {
			return true
		}
	}
	return false
}

// isContextPointer reports whether t is *durable.OrchestrationContext.
func isContextPointer(t types.Type) bool {
	ptr, ok := types.Unalias(t).(*types.Pointer)
	if !ok {
		return false
	}
	named, ok := types.Unalias(ptr.Elem()).(*types.Named)
	if !ok {
		return false
	}
	obj := named.Obj()
	return obj.Name() == "OrchestrationContext" && obj.Pkg() != nil && obj.Pkg().Path() == DurablePath
}

// check reports the constructs in one body and queues the same-package
// functions it calls.
func (c *checker) check(it item) {
	info := c.pass.TypesInfo
	ast.Inspect(it.body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.FuncLit:
			// A literal that is an orchestration itself is checked as one.
			if n.Body != it.body && c.visited[n.Body] {
				return false
			}
		case *ast.GoStmt:
			c.report(it, n.Pos(), ruleGo, "go statement in orchestration: use durable.Go")
		case *ast.SelectStmt:
			c.report(it, n.Pos(), ruleSelect, "select in orchestration: use durable.Race or durable.WaitAny")
			for _, s := range n.Body.List {
				if cc, ok := s.(*ast.CommClause); ok && cc.Comm != nil {
					c.markCommunication(cc.Comm)
				}
			}
		case *ast.SendStmt:
			if !c.inSelect[n] {
				c.report(it, n.Pos(), ruleChannel, "channel send in orchestration: use futures (durable.Go, Future.Get)")
			}
		case *ast.UnaryExpr:
			if n.Op == token.ARROW && !c.inSelect[n] {
				c.report(it, n.Pos(), ruleChannel, "channel receive in orchestration: use futures (Future.Get, durable.WaitAny)")
			}
		case *ast.RangeStmt:
			c.checkRange(it, n)
		case *ast.CallExpr:
			c.checkCall(it, n)
		case *ast.SelectorExpr:
			if id, ok := n.X.(*ast.Ident); ok {
				if _, ok := info.Uses[id].(*types.PkgName); ok {
					c.checkObject(it, n.Pos(), info.Uses[n.Sel])
					return false
				}
			}
		case *ast.Ident:
			// A name of another package used unqualified, after a dot
			// import.
			c.checkObject(it, n.Pos(), info.Uses[n])
		}
		return true
	})
}

// markCommunication records the channel operation of a select case, so it is
// not reported on top of the select.
func (c *checker) markCommunication(s ast.Stmt) {
	switch s := s.(type) {
	case *ast.SendStmt:
		c.inSelect[s] = true
	case *ast.ExprStmt:
		c.inSelect[ast.Unparen(s.X)] = true
	case *ast.AssignStmt:
		if len(s.Rhs) == 1 {
			c.inSelect[ast.Unparen(s.Rhs[0])] = true
		}
	}
}

// checkRange reports a range over a channel, a map, or an iterator of package
// maps.
func (c *checker) checkRange(it item, n *ast.RangeStmt) {
	t := c.pass.TypesInfo.TypeOf(n.X)
	if t == nil {
		return
	}
	switch t.Underlying().(type) {
	case *types.Chan:
		c.report(it, n.Pos(), ruleChannel, "range over channel in orchestration: use futures (Future.Get, durable.WaitAny)")
		return
	case *types.Map:
		c.report(it, n.Pos(), ruleMap, "range over map in orchestration: iteration order is random; range over sorted keys")
		return
	}
	call, ok := ast.Unparen(n.X).(*ast.CallExpr)
	if !ok {
		return
	}
	fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
	if fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "maps" && mapsIterators[fn.Name()] {
		c.report(it, n.Pos(), ruleMap, fmt.Sprintf(
			"range over maps.%s in orchestration: iteration order is random; range over sorted keys (slices.Sorted(maps.Keys(m)))", fn.Name()))
	}
}

// checkCall reports make(chan ...) and queues the body of a static callee
// declared in this package.
func (c *checker) checkCall(it item, call *ast.CallExpr) {
	info := c.pass.TypesInfo
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if b, ok := info.Uses[id].(*types.Builtin); ok && b.Name() == "make" && len(call.Args) > 0 {
			if t := info.TypeOf(call.Args[0]); t != nil {
				if _, ok := t.Underlying().(*types.Chan); ok {
					c.report(it, call.Pos(), ruleChannel, "make(chan) in orchestration: use futures (durable.Go, Future.Get)")
				}
			}
			return
		}
	}
	fn := typeutil.StaticCallee(info, call)
	if fn == nil || fn.Pkg() != c.pass.Pkg {
		return
	}
	decl := c.decls[fn.Origin()]
	if decl == nil || decl.Body == nil || c.visited[decl.Body] || c.ignoredAt(call.Pos()) {
		return
	}
	c.visited[decl.Body] = true
	via := it.via
	if via == "" {
		via = c.rootName(it.body)
	}
	c.queue = append(c.queue, item{body: decl.Body, via: via})
}

// checkObject reports a use of a function of package time that reads the
// clock or starts a timer, or of a source of randomness.
func (c *checker) checkObject(it item, pos token.Pos, obj types.Object) {
	if obj == nil || obj.Pkg() == nil {
		return
	}
	pkg := obj.Pkg()
	// Only package-level names: methods, fields and locals are not sources
	// of non-determinism by themselves (a *rand.Rand must come from a
	// reported rand.New).
	if obj.Parent() != pkg.Scope() {
		return
	}
	switch pkg.Path() {
	case "time":
		if _, ok := obj.(*types.Func); ok {
			if advice, ok := timeFuncs[obj.Name()]; ok {
				c.report(it, pos, ruleTime, fmt.Sprintf("time.%s in orchestration: %s", obj.Name(), advice))
			}
		}
	case "math/rand", "math/rand/v2":
		if _, ok := obj.(*types.Func); ok {
			c.report(it, pos, ruleRand, fmt.Sprintf("%s in orchestration: %s", pkg.Path(), randAdvice))
		}
	case "crypto/rand":
		switch obj.(type) {
		case *types.Func, *types.Var:
			c.report(it, pos, ruleRand, "crypto/rand in orchestration: "+randAdvice)
		}
	}
}

// rootName describes the orchestration whose body is body, for reports in
// the helpers it calls.
func (c *checker) rootName(body *ast.BlockStmt) string {
	for fn, decl := range c.decls {
		if decl.Body == body {
			if recv := fn.Signature().Recv(); recv != nil {
				t := recv.Type()
				if p, ok := t.(*types.Pointer); ok {
					t = p.Elem()
				}
				if n, ok := types.Unalias(t).(*types.Named); ok {
					return n.Obj().Name() + "." + fn.Name()
				}
			}
			return fn.Name()
		}
	}
	p := c.pass.Fset.Position(body.Pos())
	return fmt.Sprintf("func literal at %s:%d", filepath.Base(p.Filename), p.Line)
}

// report reports msg at pos unless a directive suppresses it or it was
// reported already.
func (c *checker) report(it item, pos token.Pos, rule, msg string) {
	if c.ignoredAt(pos) {
		return
	}
	if it.via != "" {
		msg += " (in a helper called from orchestration " + it.via + ")"
	}
	if c.reported[pos] == nil {
		c.reported[pos] = make(map[string]bool)
	}
	if c.reported[pos][msg] {
		return
	}
	c.reported[pos][msg] = true
	c.pass.Report(analysis.Diagnostic{Pos: pos, Category: rule, Message: msg})
}

// ignoredAt reports whether a directive suppresses reports at pos.
func (c *checker) ignoredAt(pos token.Pos) bool {
	p := c.pass.Fset.PositionFor(pos, false)
	return c.ignored[p.Filename][p.Line]
}

// readDirectives records the lines suppressed by each //durablevet:ignore
// comment of the package: its own line, and the next line when nothing but
// white space precedes the comment on its line.
func (c *checker) readDirectives() {
	for _, f := range c.pass.Files {
		var src []byte
		for _, g := range f.Comments {
			for _, cm := range g.List {
				if !isDirective(cm.Text) {
					continue
				}
				p := c.pass.Fset.PositionFor(cm.Slash, false)
				lines := c.ignored[p.Filename]
				if lines == nil {
					lines = make(map[int]bool)
					c.ignored[p.Filename] = lines
				}
				lines[p.Line] = true
				if src == nil {
					// Without the source, a directive is taken to stand
					// alone, the more forgiving reading.
					src, _ = c.pass.ReadFile(p.Filename)
				}
				if standsAlone(src, p) {
					lines[p.Line+1] = true
				}
			}
		}
	}
}

// isDirective reports whether the comment text is an ignore directive,
// optionally followed by white space and a reason.
func isDirective(text string) bool {
	rest, ok := strings.CutPrefix(text, IgnoreDirective)
	return ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t')
}

// standsAlone reports whether only white space precedes the comment at p on
// its line of src; it is true when src does not cover p.
func standsAlone(src []byte, p token.Position) bool {
	start := p.Offset - (p.Column - 1)
	if start < 0 || p.Offset > len(src) {
		return true
	}
	return strings.TrimSpace(string(src[start:p.Offset])) == ""
}
