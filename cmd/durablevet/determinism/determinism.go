// Package determinism provides an analysis.Analyzer that reports code which
// would make a durable orchestration non-deterministic on replay.
//
// An orchestration is any function, declared or literal, with a parameter of
// type *durable.OrchestrationContext (package
// github.com/duradyn/duradyn/durable). The runtime replays its code from the
// start on every turn, so the code must take the same path each time it runs.
// Inside an orchestration, and inside the functions it calls statically, the
// analyzer reports:
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
//     (range over sorted keys);
//   - environment and process reads (os.Getenv, os.LookupEnv, os.Environ,
//     os.Hostname, os.Args, ...) and file system access (os.ReadFile, os.Open,
//     os.WriteFile, ...), which belong in activities;
//   - writes to package-level variables, and sync/atomic operations on
//     package-level state.
//
// Functions of the same package are followed into and reported where the
// construct is, naming the orchestration they were reached from. Functions
// of other packages of the same module are followed through an object fact
// that the analyzer exports for each function whose code, or the code of a
// function it calls, holds such a construct; the call is reported at the
// orchestration's call site, naming the chain of calls and the construct's
// file and line. Calls through interfaces or function values, and calls into
// other modules or the standard library (beyond the functions listed above),
// are not followed. The durable package itself, and the internal packages
// below it, are not checked: they implement the deterministic primitives with
// the very constructs the analyzer reports.
//
// In every function of a checked package, a call of
// OrchestrationContext.ContinueAsNew whose error is discarded (an expression
// statement, an assignment to _, go or defer) is reported: the execution
// continues as new whatever the orchestration then returns.
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
)

// DurablePath is the import path of the package that declares
// OrchestrationContext.
const DurablePath = "github.com/duradyn/duradyn/durable"

// IgnoreDirective is the comment that suppresses a report on its own line, or
// on the next line when the comment stands alone on its line.
const IgnoreDirective = "//durablevet:ignore"

// Analyzer reports non-deterministic constructs in durable orchestrations.
var Analyzer = &analysis.Analyzer{
	Name:      "determinism",
	Doc:       doc,
	Requires:  []*analysis.Analyzer{inspect.Analyzer},
	Run:       run,
	FactTypes: []analysis.Fact{new(nondeterministic)},
}

const doc = `report non-deterministic code in durable orchestrations

Inside functions with a *durable.OrchestrationContext parameter, and inside
the functions of the same module they call, report go and select statements,
channel operations, wall-clock time and timers from package time, math/rand,
math/rand/v2 and crypto/rand, range over maps, environment and file system
access through package os, writes to package-level variables and sync/atomic
operations on package-level state. Everywhere, report a ContinueAsNew whose
error is discarded. A //durablevet:ignore comment on the line, or alone on the
line above, suppresses a report.`

// Rule categories, set as the Category of each diagnostic.
const (
	ruleGo            = "go"
	ruleSelect        = "select"
	ruleChannel       = "channel"
	ruleTime          = "time"
	ruleRand          = "rand"
	ruleMap           = "maprange"
	ruleEnv           = "env"
	ruleFile          = "file"
	ruleGlobal        = "global"
	ruleAtomic        = "atomic"
	ruleContinueAsNew = "continueasnew"
)

// checker holds the state of one pass.
type checker struct {
	pass *analysis.Pass
	// module is the path of the package's module, or empty outside a module
	// (the standard library): calls are followed across packages of the
	// same module only.
	module string
	// decls maps each function and method declared in the package to its
	// declaration, to follow static calls.
	decls map[*types.Func]*ast.FuncDecl
	// order lists the functions of decls in source order.
	order []*types.Func
	// scanned caches what each function body holds.
	scanned map[*ast.BlockStmt]*bodyInfo
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
	// name describes the orchestration whose body this is; empty for a
	// helper.
	name string
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
		scanned:  make(map[*ast.BlockStmt]*bodyInfo),
		ignored:  make(map[string]map[int]bool),
		inSelect: make(map[ast.Node]bool),
		reported: make(map[token.Pos]map[string]bool),
	}
	if pass.Module != nil {
		c.module = pass.Module.Path
	}
	c.readDirectives()
	insp := pass.ResultOf[inspect.Analyzer].(*inspector.Inspector)
	roots := c.collect(insp)
	c.checkOrchestrations(roots)
	c.checkContinueAsNew(insp)
	c.exportFacts()
	return nil, nil
}

// collect records the functions declared in the package and returns the
// orchestrations, declared or literal.
func (c *checker) collect(insp *inspector.Inspector) []item {
	var roots []item
	insp.Preorder([]ast.Node{(*ast.FuncDecl)(nil), (*ast.FuncLit)(nil)}, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.FuncDecl:
			fn, _ := c.pass.TypesInfo.Defs[n.Name].(*types.Func)
			if fn == nil {
				return
			}
			c.decls[fn] = n
			c.order = append(c.order, fn)
			if n.Body != nil && hasContextParam(fn.Signature()) {
				roots = append(roots, item{body: n.Body, name: funcName(fn)})
			}
		case *ast.FuncLit:
			if c.isOrchestrationLiteral(n) {
				p := c.pass.Fset.Position(n.Pos())
				name := fmt.Sprintf("func literal at %s:%d", filepath.Base(p.Filename), p.Line)
				roots = append(roots, item{body: n.Body, name: name})
			}
		}
	})
	return roots
}

// checkOrchestrations reports the constructs of each orchestration and of
// the functions of this package it reaches.
func (c *checker) checkOrchestrations(roots []item) {
	// Every orchestration is marked before any is checked, so one that
	// another calls is reported as itself rather than as a helper.
	visited := make(map[*ast.BlockStmt]bool)
	for _, r := range roots {
		visited[r.body] = true
	}
	queue := roots
	for len(queue) > 0 {
		it := queue[0]
		queue = queue[1:]
		b := c.scan(it.body)
		for _, f := range b.findings {
			c.report(f.pos, f.rule, f.message(it.via))
		}
		via := it.via
		if via == "" {
			via = it.name
		}
		for _, cl := range b.calls {
			if !visited[cl.decl.Body] {
				visited[cl.decl.Body] = true
				queue = append(queue, item{body: cl.decl.Body, via: via})
			}
		}
	}
}

// isOrchestrationLiteral reports whether the literal takes a
// *durable.OrchestrationContext: it is then checked as an orchestration of
// its own.
func (c *checker) isOrchestrationLiteral(lit *ast.FuncLit) bool {
	sig, ok := c.pass.TypesInfo.TypeOf(lit).(*types.Signature)
	return ok && hasContextParam(sig)
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

// funcName names a function as reports show it: Name, or Type.Name for a
// method.
func funcName(fn *types.Func) string {
	if recv := fn.Signature().Recv(); recv != nil {
		t := recv.Type()
		if p, ok := types.Unalias(t).(*types.Pointer); ok {
			t = p.Elem()
		}
		if n, ok := types.Unalias(t).(*types.Named); ok {
			return n.Obj().Name() + "." + fn.Name()
		}
	}
	return fn.Name()
}

// qualifiedName names a function with its package name, as a chain of calls
// across packages shows it: pkg.Name or pkg.Type.Name.
func qualifiedName(fn *types.Func) string {
	if fn.Pkg() == nil {
		return funcName(fn)
	}
	return fn.Pkg().Name() + "." + funcName(fn)
}

// report reports msg at pos unless it was reported already.
func (c *checker) report(pos token.Pos, rule, msg string) {
	if c.reported[pos] == nil {
		c.reported[pos] = make(map[string]bool)
	}
	if c.reported[pos][msg] {
		return
	}
	c.reported[pos][msg] = true
	c.pass.Report(analysis.Diagnostic{Pos: pos, Category: rule, Message: msg})
}
