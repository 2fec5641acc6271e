package itemsize

import "strings"

// Number is a decimal number normalised to its significant digits, the form
// a number's size is worked out from: its value is Digits × 10^Exp, Digits
// has no leading or trailing zero, and zero has empty Digits (and no sign).
// Equal numbers written differently ("1.50", "15e-1") have equal Numbers.
type Number struct {
	Negative bool
	Digits   string
	Exp      int
}

// ParseNumber parses DynamoDB's number syntax: an optional sign, digits
// with an optional decimal point, and an optional exponent. It reports
// false when s is not a number.
func ParseNumber(s string) (Number, bool) {
	var n Number
	s = strings.TrimSpace(s)
	switch {
	case strings.HasPrefix(s, "-"):
		n.Negative, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	mantissa, exponent, hasExp := strings.Cut(strings.ToLower(s), "e")
	if hasExp {
		e, ok := parseInt(exponent)
		if !ok {
			return Number{}, false
		}
		n.Exp = e
	}
	intPart, fracPart, _ := strings.Cut(mantissa, ".")
	if intPart == "" && fracPart == "" {
		return Number{}, false
	}
	digits := intPart + fracPart
	for _, c := range digits {
		if c < '0' || c > '9' {
			return Number{}, false
		}
	}
	n.Exp -= len(fracPart)
	digits = strings.TrimLeft(digits, "0")
	trimmed := strings.TrimRight(digits, "0")
	n.Exp += len(digits) - len(trimmed)
	n.Digits = trimmed
	if n.Digits == "" {
		return Number{}, true // zero: no sign, no exponent
	}
	return n, true
}

// parseInt parses an exponent: an optional sign and at most six digits.
func parseInt(s string) (int, bool) {
	neg := false
	switch {
	case strings.HasPrefix(s, "-"):
		neg, s = true, s[1:]
	case strings.HasPrefix(s, "+"):
		s = s[1:]
	}
	if s == "" || len(s) > 6 {
		return 0, false
	}
	v := 0
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	if neg {
		v = -v
	}
	return v, true
}
