package determinism

import (
	"fmt"
	"go/ast"
	"go/types"
	"path/filepath"
	"strings"
)

// nondeterministic is the object fact exported for a function, other than
// an orchestration, whose code or the code of a function it calls holds a
// reported construct. It carries the first such construct a breadth-first
// walk of the calls finds, so a call of the function from another package of
// the module is reported at the call site with the chain that leads to it.
type nondeterministic struct {
	// Module is the path of the function's module: calls are followed only
	// within one module.
	Module string
	// Rule, What and Advice are those of the construct's report.
	Rule, What, Advice string
	// Chain names the functions from this one to the one that holds the
	// construct, each as pkg.Name or pkg.Type.Name.
	Chain []string
	// At is the construct's file (base name) and line: "clock.go:12".
	At string
}

// AFact marks nondeterministic as an analysis fact.
func (*nondeterministic) AFact() {}

// String is the fact as analysistest's expectations match it.
func (f *nondeterministic) String() string {
	return fmt.Sprintf("%s through %s", f.What, f.path())
}

// path is the chain of calls and the construct's place, as reports show it:
// "clock.Stamp -> clock.now (clock.go:12)".
func (f *nondeterministic) path() string {
	return strings.Join(f.Chain, " -> ") + " (" + f.At + ")"
}

// checkImported records a call of a function of another package of the
// module that reaches a reported construct, at the call site.
func (c *checker) checkImported(b *bodyInfo, fn *types.Func, call *ast.CallExpr) {
	if c.module == "" {
		return
	}
	var f nondeterministic
	if !c.pass.ImportObjectFact(fn, &f) || f.Module != c.module {
		return
	}
	c.add(b, finding{pos: call.Pos(), rule: f.Rule, what: f.What, advice: f.Advice, through: &f})
}

// exportFacts exports a nondeterministic fact for each function of the
// package, other than an orchestration, that reaches a reported construct.
// Orchestrations are left out: they are reported in their own package, and
// a call of one from another orchestration is a sub-call of the same kind of
// code, checked where it is written. Outside a module (the standard
// library) nothing is exported; packages of modules with a version (those
// from the module cache) are skipped too, since no package of the module
// being checked belongs to them.
func (c *checker) exportFacts() {
	if c.module == "" || c.pass.Module.Version != "" {
		return
	}
	for _, fn := range c.order {
		decl := c.decls[fn]
		if decl.Body == nil || hasContextParam(fn.Signature()) {
			continue
		}
		if f := c.summarize(fn, decl); f != nil {
			c.pass.ExportObjectFact(fn, f)
		}
	}
}

// summarize walks the calls from fn breadth first, through the functions of
// this package, and returns the fact for the first construct found, or nil.
func (c *checker) summarize(fn *types.Func, decl *ast.FuncDecl) *nondeterministic {
	type node struct {
		call   localCall
		parent int
	}
	nodes := []node{{call: localCall{fn: fn, decl: decl}, parent: -1}}
	seen := map[*ast.BlockStmt]bool{decl.Body: true}
	for i := 0; i < len(nodes); i++ {
		b := c.scan(nodes[i].call.decl.Body)
		if len(b.findings) > 0 {
			var chain []string
			for j := i; j >= 0; j = nodes[j].parent {
				chain = append([]string{qualifiedName(nodes[j].call.fn)}, chain...)
			}
			return c.fact(chain, b.findings[0])
		}
		for _, cl := range b.calls {
			if !seen[cl.decl.Body] {
				seen[cl.decl.Body] = true
				nodes = append(nodes, node{call: cl, parent: i})
			}
		}
	}
	return nil
}

// fact is the fact for finding f reached through chain.
func (c *checker) fact(chain []string, f finding) *nondeterministic {
	out := &nondeterministic{Module: c.module, Rule: f.rule, What: f.what, Advice: f.advice, Chain: chain}
	if f.through != nil {
		out.Chain = append(out.Chain, f.through.Chain...)
		out.At = f.through.At
		return out
	}
	p := c.pass.Fset.Position(f.pos)
	out.At = fmt.Sprintf("%s:%d", filepath.Base(p.Filename), p.Line)
	return out
}
