package faults

import (
	"fmt"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// This file evaluates the DynamoDB expressions of queries served by the
// index-lag model: conditions (comparisons = <> < <= > >=, BETWEEN,
// begins_with, attribute_exists, attribute_not_exists, AND, OR, NOT,
// parentheses) and projections of top-level attributes, with #name and
// :value placeholders. Anything else fails with an error that names the
// expression: it is never evaluated approximately.

// item is one stored row.
type item = map[string]types.AttributeValue

// exprError is a problem with one expression of a request. unsupported
// marks valid DynamoDB syntax the evaluator does not implement.
type exprError struct {
	which, text, msg string
	unsupported      bool
}

func (e *exprError) Error() string {
	if e.which == "" {
		return e.msg
	}
	return fmt.Sprintf("invalid %s %q: %s", e.which, e.text, e.msg)
}

// exprSet resolves the placeholders of one request's expressions and
// records which ones they used, so that unused ones are reported as
// DynamoDB reports them.
type exprSet struct {
	names      map[string]string
	values     map[string]types.AttributeValue
	usedNames  map[string]bool
	usedValues map[string]bool
}

func newExprSet(names map[string]string, values map[string]types.AttributeValue) *exprSet {
	return &exprSet{names: names, values: values, usedNames: map[string]bool{}, usedValues: map[string]bool{}}
}

// checkUnused reports placeholders that no expression of the request used.
func (s *exprSet) checkUnused() error {
	var names, values []string
	for n := range s.names {
		if !s.usedNames[n] {
			names = append(names, n)
		}
	}
	for v := range s.values {
		if !s.usedValues[v] {
			values = append(values, v)
		}
	}
	slices.Sort(names)
	slices.Sort(values)
	switch {
	case len(names) > 0:
		return &exprError{msg: "Value provided in ExpressionAttributeNames unused in expressions: keys: {" + strings.Join(names, ", ") + "}"}
	case len(values) > 0:
		return &exprError{msg: "Value provided in ExpressionAttributeValues unused in expressions: keys: {" + strings.Join(values, ", ") + "}"}
	}
	return nil
}

// condOp is the kind of a condition node.
type condOp int

const (
	opAnd condOp = iota + 1
	opOr
	opNot
	opCompare    // args[0] cmp args[1]
	opBetween    // args[0] BETWEEN args[1] AND args[2]
	opBeginsWith // begins_with(args[0], args[1])
	opExists     // attribute_exists(args[0])
	opNotExists  // attribute_not_exists(args[0])
)

// cond is a parsed condition.
type cond struct {
	op   condOp
	cmp  string // comparator of opCompare
	kids []*cond
	args []operand
}

// operand is an attribute path (a top-level name) or a value.
type operand struct {
	path  string
	value types.AttributeValue // nil for a path
}

// condition parses the condition text, which is the request's field which
// ("KeyConditionExpression", "FilterExpression").
func (s *exprSet) condition(which, text string) (*cond, error) {
	p, err := s.parser(which, text)
	if err != nil {
		return nil, err
	}
	c, err := p.or()
	if err != nil {
		return nil, err
	}
	if t := p.peek(); t.kind != tokEOF {
		return nil, p.errorf("unexpected %q at position %d", t.text, t.pos)
	}
	return c, nil
}

// projection parses a ProjectionExpression into attribute names.
func (s *exprSet) projection(text string) ([]string, error) {
	p, err := s.parser("ProjectionExpression", text)
	if err != nil {
		return nil, err
	}
	var names []string
	for {
		o, err := p.operand()
		if err != nil {
			return nil, err
		}
		if o.value != nil {
			return nil, p.errorf("a value cannot be projected")
		}
		if slices.Contains(names, o.path) {
			return nil, p.errorf("two document paths overlap: %s", o.path)
		}
		names = append(names, o.path)
		t := p.next()
		if t.kind == tokEOF {
			return names, nil
		}
		if t.kind != tokComma {
			return nil, p.errorf("unexpected %q at position %d", t.text, t.pos)
		}
	}
}

// Tokens.

type tokKind int

const (
	tokEOF tokKind = iota
	tokIdent
	tokName  // #name
	tokValue // :value
	tokLParen
	tokRParen
	tokComma
	tokCmp
)

type token struct {
	kind tokKind
	text string
	pos  int
}

func isWordByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// tokenize splits an expression into tokens.
func tokenize(text string) ([]token, *exprError) {
	var toks []token
	for i := 0; i < len(text); {
		c := text[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')' || c == ',':
			kind := map[byte]tokKind{'(': tokLParen, ')': tokRParen, ',': tokComma}[c]
			toks = append(toks, token{kind, string(c), i})
			i++
		case c == '=':
			toks = append(toks, token{tokCmp, "=", i})
			i++
		case c == '<' || c == '>':
			op := string(c)
			if i+1 < len(text) && (text[i+1] == '=' || c == '<' && text[i+1] == '>') {
				op += string(text[i+1])
			}
			toks = append(toks, token{tokCmp, op, i})
			i += len(op)
		case c == '#' || c == ':':
			j := i + 1
			for j < len(text) && isWordByte(text[j]) {
				j++
			}
			if j == i+1 {
				return nil, &exprError{msg: fmt.Sprintf("empty placeholder at position %d", i)}
			}
			kind := tokName
			if c == ':' {
				kind = tokValue
			}
			toks = append(toks, token{kind, text[i:j], i})
			i = j
		case isWordByte(c):
			j := i
			for j < len(text) && isWordByte(text[j]) {
				j++
			}
			toks = append(toks, token{tokIdent, text[i:j], i})
			i = j
		case c == '.' || c == '[' || c == ']':
			return nil, &exprError{msg: fmt.Sprintf("nested attribute paths (%q at position %d) are not supported", c, i), unsupported: true}
		default:
			return nil, &exprError{msg: fmt.Sprintf("invalid character %q at position %d", c, i)}
		}
	}
	return append(toks, token{tokEOF, "end of expression", len(text)}), nil
}

// Parser.

type parser struct {
	set         *exprSet
	which, text string
	toks        []token
	at          int
}

func (s *exprSet) parser(which, text string) (*parser, error) {
	toks, err := tokenize(text)
	if err != nil {
		err.which, err.text = which, text
		return nil, err
	}
	return &parser{set: s, which: which, text: text, toks: toks}, nil
}

func (p *parser) peek() token { return p.toks[p.at] }

func (p *parser) peekAt(n int) token { return p.toks[min(p.at+n, len(p.toks)-1)] }

func (p *parser) next() token {
	t := p.toks[p.at]
	if t.kind != tokEOF {
		p.at++
	}
	return t
}

func (p *parser) errorf(format string, args ...any) *exprError {
	return &exprError{which: p.which, text: p.text, msg: fmt.Sprintf(format, args...)}
}

func (p *parser) unsupported(format string, args ...any) *exprError {
	e := p.errorf(format, args...)
	e.unsupported = true
	return e
}

// keyword reports whether t is the keyword kw (case-insensitive, as
// DynamoDB's keywords are).
func keyword(t token, kw string) bool { return t.kind == tokIdent && strings.EqualFold(t.text, kw) }

func isKeyword(t token) bool {
	for _, kw := range []string{"AND", "OR", "NOT", "BETWEEN", "IN"} {
		if keyword(t, kw) {
			return true
		}
	}
	return false
}

func (p *parser) or() (*cond, error) {
	left, err := p.and()
	if err != nil {
		return nil, err
	}
	for keyword(p.peek(), "OR") {
		p.next()
		right, err := p.and()
		if err != nil {
			return nil, err
		}
		left = &cond{op: opOr, kids: []*cond{left, right}}
	}
	return left, nil
}

func (p *parser) and() (*cond, error) {
	left, err := p.not()
	if err != nil {
		return nil, err
	}
	for keyword(p.peek(), "AND") {
		p.next()
		right, err := p.not()
		if err != nil {
			return nil, err
		}
		left = &cond{op: opAnd, kids: []*cond{left, right}}
	}
	return left, nil
}

func (p *parser) not() (*cond, error) {
	if keyword(p.peek(), "NOT") {
		p.next()
		kid, err := p.not()
		if err != nil {
			return nil, err
		}
		return &cond{op: opNot, kids: []*cond{kid}}, nil
	}
	return p.primary()
}

func (p *parser) primary() (*cond, error) {
	t := p.peek()
	if t.kind == tokLParen {
		p.next()
		c, err := p.or()
		if err != nil {
			return nil, err
		}
		if t := p.next(); t.kind != tokRParen {
			return nil, p.errorf("expected ) at position %d, got %q", t.pos, t.text)
		}
		return c, nil
	}
	if t.kind == tokIdent && p.peekAt(1).kind == tokLParen {
		return p.function()
	}
	left, err := p.operand()
	if err != nil {
		return nil, err
	}
	t = p.next()
	switch {
	case t.kind == tokCmp:
		right, err := p.operand()
		if err != nil {
			return nil, err
		}
		return &cond{op: opCompare, cmp: t.text, args: []operand{left, right}}, nil
	case keyword(t, "BETWEEN"):
		lo, err := p.operand()
		if err != nil {
			return nil, err
		}
		if t := p.next(); !keyword(t, "AND") {
			return nil, p.errorf("expected AND of BETWEEN at position %d, got %q", t.pos, t.text)
		}
		hi, err := p.operand()
		if err != nil {
			return nil, err
		}
		return &cond{op: opBetween, args: []operand{left, lo, hi}}, nil
	case keyword(t, "IN"):
		return nil, p.unsupported("the IN operator is not supported")
	}
	return nil, p.errorf("expected a comparator, BETWEEN or IN at position %d, got %q", t.pos, t.text)
}

// function parses a function call used as a condition.
func (p *parser) function() (*cond, error) {
	name := p.next()
	p.next() // (
	var op condOp
	arity := 1
	switch name.text { // function names are case-sensitive
	case "begins_with":
		op, arity = opBeginsWith, 2
	case "attribute_exists":
		op = opExists
	case "attribute_not_exists":
		op = opNotExists
	case "contains", "size", "attribute_type":
		return nil, p.unsupported("function %s is not supported", name.text)
	default:
		return nil, p.errorf("invalid function name %q", name.text)
	}
	var args []operand
	for {
		o, err := p.operand()
		if err != nil {
			return nil, err
		}
		args = append(args, o)
		t := p.next()
		if t.kind == tokRParen {
			break
		}
		if t.kind != tokComma {
			return nil, p.errorf("expected , or ) at position %d, got %q", t.pos, t.text)
		}
	}
	if len(args) != arity {
		return nil, p.errorf("function %s takes %d arguments, got %d", name.text, arity, len(args))
	}
	if args[0].value != nil {
		return nil, p.errorf("the first argument of %s must be an attribute", name.text)
	}
	return &cond{op: op, args: args}, nil
}

// operand parses an attribute name (a #name placeholder or a plain name)
// or a :value placeholder.
func (p *parser) operand() (operand, error) {
	t := p.next()
	switch t.kind {
	case tokName:
		name, ok := p.set.names[t.text]
		if !ok {
			return operand{}, p.errorf("An expression attribute name used in the document path is not defined; attribute name: %s", t.text)
		}
		p.set.usedNames[t.text] = true
		return operand{path: name}, nil
	case tokValue:
		v, ok := p.set.values[t.text]
		if !ok {
			return operand{}, p.errorf("An expression attribute value used in expression is not defined; attribute value: %s", t.text)
		}
		p.set.usedValues[t.text] = true
		return operand{value: v}, nil
	case tokIdent:
		if p.peek().kind == tokLParen {
			return operand{}, p.unsupported("function %s as an operand is not supported", t.text)
		}
		if isKeyword(t) {
			return operand{}, p.errorf("unexpected keyword %s at position %d", t.text, t.pos)
		}
		return operand{path: t.text}, nil
	}
	return operand{}, p.errorf("expected an attribute or a value at position %d, got %q", t.pos, t.text)
}
