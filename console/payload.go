package console

import (
	"bytes"
	"encoding/json"
)

// maxPayloadShown is how much of a payload a page shows.
const maxPayloadShown = 64 << 10

// payload is a value from the store as a page shows it: pretty-printed
// when it is JSON, cut at maxPayloadShown, with a one-line preview for its
// folded form.
type payload struct {
	Text      string
	Preview   string
	Size      int
	JSON      bool
	Truncated bool
}

// newPayload prepares s for display.
func newPayload(s string) payload {
	p := payload{Size: len(s), Text: s}
	if len(s) <= maxPayloadShown && json.Valid([]byte(s)) {
		var buf bytes.Buffer
		if json.Indent(&buf, []byte(s), "", "  ") == nil {
			p.Text, p.JSON = buf.String(), true
		}
	}
	if len(p.Text) > maxPayloadShown {
		p.Text, p.Truncated = truncate(p.Text, maxPayloadShown), true
	}
	p.Preview = truncate(oneLine(s), 120)
	return p
}

// jsonPayload is v encoded as JSON, for display.
func jsonPayload(v any) payload {
	b, err := json.Marshal(v)
	if err != nil {
		return newPayload(err.Error())
	}
	return newPayload(string(b))
}

// oneLine replaces line breaks and tabs with spaces.
func oneLine(s string) string {
	if len(s) > 4*120 {
		s = s[:4*120]
	}
	b := []byte(s)
	for i, c := range b {
		if c == '\n' || c == '\r' || c == '\t' {
			b[i] = ' '
		}
	}
	return string(b)
}
