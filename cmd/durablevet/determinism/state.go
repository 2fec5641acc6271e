package determinism

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
)

// globalAdvice is the replacement named for package-level state: a replay
// does not restore it, and every instance the process runs shares it.
const globalAdvice = "package-level state is not replayed and every instance shares it; keep state in local variables or pass it in as input"

// checkAssign records the assignments to package-level variables. A short
// variable declaration declares locals, so only = and op= are looked at.
func (c *checker) checkAssign(b *bodyInfo, n *ast.AssignStmt) {
	if n.Tok == token.DEFINE {
		return
	}
	for _, lhs := range n.Lhs {
		c.checkWrite(b, lhs)
	}
}

// checkWrite records a write to e when e is, or is part of, a package-level
// variable.
func (c *checker) checkWrite(b *bodyInfo, e ast.Expr) {
	if v := c.packageVar(e); v != nil {
		c.add(b, finding{pos: e.Pos(), rule: ruleGlobal, what: "write to package-level variable " + c.varName(v), advice: globalAdvice})
	}
}

// checkAtomic records a function of sync/atomic whose first argument points
// into a package-level variable, and a method of an atomic type (atomic.Int64,
// atomic.Value, ...) called on a package-level variable.
func (c *checker) checkAtomic(b *bodyInfo, fn *types.Func, call *ast.CallExpr) {
	if fn.Pkg() == nil || fn.Pkg().Path() != "sync/atomic" {
		return
	}
	var target ast.Expr
	if fn.Signature().Recv() != nil {
		sel, ok := ast.Unparen(call.Fun).(*ast.SelectorExpr)
		if !ok {
			return
		}
		target = sel.X
	} else if len(call.Args) > 0 {
		target = call.Args[0]
	}
	if target == nil {
		return
	}
	if v := c.packageVar(target); v != nil {
		c.add(b, finding{pos: call.Pos(), rule: ruleAtomic,
			what:   fmt.Sprintf("atomic.%s on package-level variable %s", funcName(fn), c.varName(v)),
			advice: globalAdvice})
	}
}

// packageVar returns the package-level variable that e is or is part of (a
// field, an element, what it points to), or nil.
func (c *checker) packageVar(e ast.Expr) *types.Var {
	info := c.pass.TypesInfo
	for {
		switch x := ast.Unparen(e).(type) {
		case *ast.Ident:
			return packageLevel(info.Uses[x])
		case *ast.SelectorExpr:
			sel, ok := info.Selections[x]
			if !ok {
				// A qualified name: pkg.Var.
				return packageLevel(info.Uses[x.Sel])
			}
			if sel.Kind() != types.FieldVal {
				return nil
			}
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.SliceExpr:
			e = x.X
		case *ast.StarExpr:
			e = x.X
		case *ast.UnaryExpr:
			if x.Op != token.AND {
				return nil
			}
			e = x.X
		default:
			return nil
		}
	}
}

// packageLevel returns obj when it is a package-level variable.
func packageLevel(obj types.Object) *types.Var {
	v, ok := obj.(*types.Var)
	if !ok || v.Pkg() == nil || v.Parent() != v.Pkg().Scope() {
		return nil
	}
	return v
}

// varName names v as the code of this package spells it.
func (c *checker) varName(v *types.Var) string {
	if v.Pkg() == c.pass.Pkg {
		return v.Name()
	}
	return v.Pkg().Name() + "." + v.Name()
}
