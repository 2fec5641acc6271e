package determinism

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"

	"golang.org/x/tools/go/types/typeutil"
)

// finding is a construct found in a function body.
type finding struct {
	pos  token.Pos
	rule string
	// what names the construct: "time.Now", "go statement".
	what string
	// advice says what to use instead.
	advice string
	// through is set for a call of a function of another package: the fact
	// that says what the callee reaches.
	through *nondeterministic
}

// message is the report of the finding; via names the orchestration a
// helper was reached from, and is empty in an orchestration.
func (f finding) message(via string) string {
	msg := f.what + " in orchestration"
	if f.through != nil {
		msg += ", through " + f.through.path()
	}
	msg += ": " + f.advice
	if via != "" {
		msg += " (in a helper called from orchestration " + via + ")"
	}
	return msg
}

// bodyInfo is what one function body holds.
type bodyInfo struct {
	// findings lists the constructs of the body in source order, those a
	// directive suppresses left out.
	findings []finding
	// calls lists the static calls of functions declared in this package,
	// in source order, those on a suppressed line left out.
	calls []localCall
}

// localCall is a static call of a function declared in this package.
type localCall struct {
	fn   *types.Func
	decl *ast.FuncDecl
}

// scan returns what body holds. Function literals inside it are part of it,
// except those that are orchestrations of their own.
func (c *checker) scan(body *ast.BlockStmt) *bodyInfo {
	if b, ok := c.scanned[body]; ok {
		return b
	}
	b := &bodyInfo{}
	c.scanned[body] = b
	ast.Inspect(body, func(n ast.Node) bool {
		return c.scanNode(b, body, n)
	})
	return b
}

// scanNode records what node n of body holds and reports whether to look
// inside it.
func (c *checker) scanNode(b *bodyInfo, body *ast.BlockStmt, n ast.Node) bool {
	info := c.pass.TypesInfo
	switch n := n.(type) {
	case *ast.FuncLit:
		return n.Body == body || !c.isOrchestrationLiteral(n)
	case *ast.GoStmt:
		c.add(b, finding{pos: n.Pos(), rule: ruleGo, what: "go statement", advice: "use durable.Go"})
	case *ast.SelectStmt:
		c.add(b, finding{pos: n.Pos(), rule: ruleSelect, what: "select", advice: "use durable.Race or durable.WaitAny"})
		for _, s := range n.Body.List {
			if cc, ok := s.(*ast.CommClause); ok && cc.Comm != nil {
				c.markCommunication(cc.Comm)
			}
		}
	case *ast.SendStmt:
		if !c.inSelect[n] {
			c.add(b, finding{pos: n.Pos(), rule: ruleChannel, what: "channel send", advice: "use futures (durable.Go, Future.Get)"})
		}
	case *ast.UnaryExpr:
		if n.Op == token.ARROW && !c.inSelect[n] {
			c.add(b, finding{pos: n.Pos(), rule: ruleChannel, what: "channel receive", advice: "use futures (Future.Get, durable.WaitAny)"})
		}
	case *ast.RangeStmt:
		c.checkRange(b, n)
	case *ast.AssignStmt:
		c.checkAssign(b, n)
	case *ast.IncDecStmt:
		c.checkWrite(b, n.X)
	case *ast.CallExpr:
		c.checkCall(b, n)
	case *ast.SelectorExpr:
		if id, ok := n.X.(*ast.Ident); ok {
			if _, ok := info.Uses[id].(*types.PkgName); ok {
				c.checkObject(b, n.Pos(), info.Uses[n.Sel])
				return false
			}
		}
	case *ast.Ident:
		// A name of another package used unqualified, after a dot
		// import.
		c.checkObject(b, n.Pos(), info.Uses[n])
	}
	return true
}

// add records f unless a directive suppresses it.
func (c *checker) add(b *bodyInfo, f finding) {
	if !c.ignoredAt(f.pos) {
		b.findings = append(b.findings, f)
	}
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

// checkRange records a range over a channel, a map, or an iterator of
// package maps, and a range that assigns to package-level variables.
func (c *checker) checkRange(b *bodyInfo, n *ast.RangeStmt) {
	if n.Tok == token.ASSIGN {
		for _, e := range []ast.Expr{n.Key, n.Value} {
			if e != nil {
				c.checkWrite(b, e)
			}
		}
	}
	t := c.pass.TypesInfo.TypeOf(n.X)
	if t == nil {
		return
	}
	switch t.Underlying().(type) {
	case *types.Chan:
		c.add(b, finding{pos: n.Pos(), rule: ruleChannel, what: "range over channel", advice: "use futures (Future.Get, durable.WaitAny)"})
		return
	case *types.Map:
		c.add(b, finding{pos: n.Pos(), rule: ruleMap, what: "range over map", advice: "iteration order is random; range over sorted keys"})
		return
	}
	call, ok := ast.Unparen(n.X).(*ast.CallExpr)
	if !ok {
		return
	}
	fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
	if fn != nil && fn.Pkg() != nil && fn.Pkg().Path() == "maps" && mapsIterators[fn.Name()] {
		c.add(b, finding{pos: n.Pos(), rule: ruleMap, what: "range over maps." + fn.Name(),
			advice: "iteration order is random; range over sorted keys (slices.Sorted(maps.Keys(m)))"})
	}
}

// checkCall records make(chan ...), delete and clear of package-level maps,
// sync/atomic on package-level state and calls of functions of other
// packages of the module that reach a construct; and it records the static
// calls of functions declared in this package.
func (c *checker) checkCall(b *bodyInfo, call *ast.CallExpr) {
	info := c.pass.TypesInfo
	if id, ok := ast.Unparen(call.Fun).(*ast.Ident); ok {
		if bi, ok := info.Uses[id].(*types.Builtin); ok {
			c.checkBuiltin(b, bi, call)
			return
		}
	}
	fn := typeutil.StaticCallee(info, call)
	if fn == nil {
		return
	}
	fn = fn.Origin()
	if fn.Pkg() != c.pass.Pkg {
		c.checkAtomic(b, fn, call)
		c.checkImported(b, fn, call)
		return
	}
	decl := c.decls[fn]
	if decl == nil || decl.Body == nil || c.ignoredAt(call.Pos()) {
		return
	}
	b.calls = append(b.calls, localCall{fn: fn, decl: decl})
}

// checkBuiltin records make(chan ...), and delete or clear of a
// package-level map.
func (c *checker) checkBuiltin(b *bodyInfo, bi *types.Builtin, call *ast.CallExpr) {
	if len(call.Args) == 0 {
		return
	}
	switch bi.Name() {
	case "make":
		if t := c.pass.TypesInfo.TypeOf(call.Args[0]); t != nil {
			if _, ok := t.Underlying().(*types.Chan); ok {
				c.add(b, finding{pos: call.Pos(), rule: ruleChannel, what: "make(chan)", advice: "use futures (durable.Go, Future.Get)"})
			}
		}
	case "delete", "clear":
		if v := c.packageVar(call.Args[0]); v != nil {
			c.add(b, finding{pos: call.Pos(), rule: ruleGlobal,
				what:   fmt.Sprintf("%s on package-level variable %s", bi.Name(), v.Name()),
				advice: globalAdvice})
		}
	}
}
