package determinism

import (
	"go/ast"

	"golang.org/x/tools/go/ast/inspector"
	"golang.org/x/tools/go/types/typeutil"
)

// continueAsNewMessage is the report of a discarded ContinueAsNew error.
const continueAsNewMessage = "ContinueAsNew's error discarded: the execution continues as new anyway " +
	"and what the orchestration returns is dropped; return it (return ctx.ContinueAsNew(in))"

// checkContinueAsNew reports, in every function of the package, a call of
// OrchestrationContext.ContinueAsNew whose error is discarded: a call
// statement, go or defer, or an assignment or declaration of it to _. The
// runtime continues as new once the call is made, whatever the
// orchestration returns, so code that goes on after it is misleading at
// best.
func (c *checker) checkContinueAsNew(insp *inspector.Inspector) {
	nodes := []ast.Node{(*ast.ExprStmt)(nil), (*ast.GoStmt)(nil), (*ast.DeferStmt)(nil), (*ast.AssignStmt)(nil), (*ast.ValueSpec)(nil)}
	insp.Preorder(nodes, func(n ast.Node) {
		switch n := n.(type) {
		case *ast.ExprStmt:
			c.reportContinueAsNew(n.X)
		case *ast.GoStmt:
			c.reportContinueAsNew(n.Call)
		case *ast.DeferStmt:
			c.reportContinueAsNew(n.Call)
		case *ast.AssignStmt:
			c.reportBlankContinueAsNew(n.Lhs, n.Rhs)
		case *ast.ValueSpec:
			lhs := make([]ast.Expr, len(n.Names))
			for i, id := range n.Names {
				lhs[i] = id
			}
			c.reportBlankContinueAsNew(lhs, n.Values)
		}
	})
}

// reportBlankContinueAsNew reports each ContinueAsNew call of rhs assigned
// to the blank identifier.
func (c *checker) reportBlankContinueAsNew(lhs, rhs []ast.Expr) {
	if len(lhs) != len(rhs) {
		return
	}
	for i, l := range lhs {
		if id, ok := ast.Unparen(l).(*ast.Ident); ok && id.Name == "_" {
			c.reportContinueAsNew(rhs[i])
		}
	}
}

// reportContinueAsNew reports e when it is a call of ContinueAsNew.
func (c *checker) reportContinueAsNew(e ast.Expr) {
	call, ok := ast.Unparen(e).(*ast.CallExpr)
	if !ok || !c.isContinueAsNew(call) || c.ignoredAt(call.Pos()) {
		return
	}
	c.report(call.Pos(), ruleContinueAsNew, continueAsNewMessage)
}

// isContinueAsNew reports whether call calls
// (*durable.OrchestrationContext).ContinueAsNew.
func (c *checker) isContinueAsNew(call *ast.CallExpr) bool {
	fn := typeutil.StaticCallee(c.pass.TypesInfo, call)
	if fn == nil || fn.Name() != "ContinueAsNew" {
		return false
	}
	recv := fn.Signature().Recv()
	return recv != nil && isContextPointer(recv.Type())
}
