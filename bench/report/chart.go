package report

import (
	"encoding/xml"
	"fmt"
	"math"
	"strings"
)

// Layout of a chart, in SVG user units (pixels).
const (
	chartWidth      = 760.0
	chartPadding    = 16.0
	chartTitleSpace = 56.0 // title and metric line above the bars
	chartAxisSpace  = 28.0 // below the bars
	barHeight       = 20.0
	barGap          = 8.0
	charWidth       = 7.2   // average advance of a 12 px sans-serif character
	minLabelWidth   = 80.0  // room for system names, at least
	maxLabelWidth   = 320.0 // and at most; longer names are shortened
	valueLabelSpace = 96.0  // room right of the longest bar for its value
	barColour       = "#4e79a7"
)

// chartMetric is the figure a scenario's chart shows: its name and its
// value for a result (ok false when the result has none).
type chartMetric struct {
	name  string
	value func(Result) (v float64, ok bool)
}

// chooseChartMetric returns activities/s when any result completed
// activities, else the first Extra figure by name; ok is false when there
// is neither.
func chooseChartMetric(results []Result) (chartMetric, bool) {
	for _, r := range results {
		if r.Activities != 0 {
			return chartMetric{"activities/s", func(r Result) (float64, bool) {
				v := r.ActivitiesPerSecond()
				return v, v != 0
			}}, true
		}
	}
	keys := extraKeys(results)
	if len(keys) == 0 {
		return chartMetric{}, false
	}
	key := keys[0]
	return chartMetric{key, func(r Result) (float64, bool) {
		v, ok := r.Extra[key]
		return v, ok
	}}, true
}

// svgChart draws a horizontal bar chart of the chart metric of results, one
// bar per result in order, each labelled with its system and value. Results
// without a value are listed with "no figure".
func svgChart(scenario string, results []Result) string {
	metric, ok := chooseChartMetric(results)
	caption := metric.name
	if !ok {
		caption = "no figures to chart"
	}

	labelWidth := minLabelWidth
	for _, r := range results {
		labelWidth = max(labelWidth, float64(len([]rune(r.System)))*charWidth+chartPadding)
	}
	labelWidth = min(labelWidth, maxLabelWidth)
	maxLabelChars := int(math.Floor((maxLabelWidth - chartPadding) / charWidth))

	peak := 0.0
	for _, r := range results {
		if ok {
			if v, has := metric.value(r); has && finite(v) {
				peak = max(peak, v)
			}
		}
	}
	barX := chartPadding + labelWidth
	barSpace := chartWidth - barX - valueLabelSpace - chartPadding
	height := chartTitleSpace + float64(len(results))*(barHeight+barGap) + chartAxisSpace

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="Helvetica, Arial, sans-serif" font-size="12">`+"\n",
		coord(chartWidth), coord(height), coord(chartWidth), coord(height))
	fmt.Fprintf(&b, "<title>%s: %s</title>\n", escape(scenario), escape(caption))
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="#ffffff"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%s" y="24" font-size="16" font-weight="bold" fill="#222222">%s</text>`+"\n",
		coord(chartPadding), escape(scenario))
	fmt.Fprintf(&b, `<text x="%s" y="44" fill="#555555">%s</text>`+"\n",
		coord(chartPadding), escape(caption))

	for i, r := range results {
		y := chartTitleSpace + float64(i)*(barHeight+barGap)
		textY := y + barHeight/2 + 4 // baseline of text centred on the bar
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="end" fill="#222222">%s</text>`+"\n",
			coord(barX-8), coord(textY), escape(shorten(r.System, maxLabelChars)))
		v, has := 0.0, false
		if ok {
			v, has = metric.value(r)
		}
		if !has || !finite(v) {
			fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#888888">no figure</text>`+"\n", coord(barX+4), coord(textY))
			continue
		}
		width := 0.0
		if peak > 0 && v > 0 {
			width = math.Max(v/peak*barSpace, 1) // a visible sliver for tiny values
		}
		fmt.Fprintf(&b, `<rect x="%s" y="%s" width="%s" height="%s" fill="%s"/>`+"\n",
			coord(barX), coord(y), coord(width), coord(barHeight), barColour)
		fmt.Fprintf(&b, `<text x="%s" y="%s" fill="#222222">%s</text>`+"\n",
			coord(barX+width+6), coord(textY), escape(formatNumber(v)))
	}
	axisY := chartTitleSpace + float64(len(results))*(barHeight+barGap)
	fmt.Fprintf(&b, `<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="#999999"/>`+"\n",
		coord(barX), coord(chartTitleSpace-barGap/2), coord(barX), coord(axisY-barGap/2))
	b.WriteString("</svg>\n")
	return b.String()
}

// coord writes an SVG coordinate with one decimal, the same on every
// machine.
func coord(v float64) string { return fmt.Sprintf("%.1f", v) }

// escape makes s safe as XML character data or attribute text.
func escape(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s)) // a strings.Builder never fails
	return b.String()
}

// shorten cuts s to at most n characters, ending it with "…" when cut.
func shorten(s string, n int) string {
	runes := []rune(s)
	if len(runes) <= n {
		return s
	}
	return string(runes[:n-1]) + "…"
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
