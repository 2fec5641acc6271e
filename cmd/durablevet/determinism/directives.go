package determinism

import (
	"go/token"
	"strings"
)

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
