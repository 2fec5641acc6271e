package report

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// significantDigits is how many significant digits numbers below 1,000 keep.
const significantDigits = 3

// formatNumber writes v readably: values of 1,000 and more as whole numbers
// with thousands separators ("12,345"), smaller ones with three significant
// digits and no trailing zeros ("123", "12.3", "1.2", "0.0123"). Values
// below 10⁻⁶ use exponent notation.
func formatNumber(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return strconv.FormatFloat(v, 'g', -1, 64)
	case v == 0:
		return "0"
	case v < 0:
		return "-" + formatNumber(-v)
	case v < 1e-6:
		return strconv.FormatFloat(v, 'g', significantDigits, 64)
	}
	if math.Round(v) >= 1000 {
		return formatInt(int64(math.Round(v)))
	}
	decimals := max(significantDigits-1-int(math.Floor(math.Log10(v))), 0)
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// formatInt writes n with thousands separators: 1234567 → "1,234,567".
func formatInt(n int64) string {
	if n < 0 {
		return "-" + formatInt(-n)
	}
	digits := strconv.FormatInt(n, 10)
	var b strings.Builder
	for i, d := range digits {
		if i > 0 && (len(digits)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(d)
	}
	return b.String()
}

// formatDuration writes d in the largest unit in which it is at least 1
// (s, ms, µs or ns), with the digits of [formatNumber]: "1.23 s",
// "45.6 ms", "1,234 s".
func formatDuration(d time.Duration) string {
	units := []struct {
		name string
		size time.Duration
	}{
		{"s", time.Second},
		{"ms", time.Millisecond},
		{"µs", time.Microsecond},
	}
	for _, u := range units {
		if d >= u.size || -d >= u.size {
			return formatNumber(float64(d)/float64(u.size)) + " " + u.name
		}
	}
	return formatNumber(float64(d)) + " ns"
}
