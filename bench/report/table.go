package report

import (
	"cmp"
	"maps"
	"slices"
	"strings"
)

// column is one column of a scenario's table: its header and how to fill a
// cell; an empty cell means the figure does not apply to the row.
type column struct {
	header string
	cell   func(Result) string
}

// byOperationHeader heads the column of DynamoDB requests by operation.
const byOperationHeader = "DynamoDB requests/activity by operation"

// sqsByOperationHeader heads the column of SQS requests by operation.
const sqsByOperationHeader = "SQS requests/activity by operation"

// byItemHeader heads the column of write units by item kind.
const byItemHeader = "WRU/activity by item"

// textColumns are the headers of the columns that hold text, which align
// left; figures align right.
var textColumns = []string{"System", byOperationHeader, byItemHeader, sqsByOperationHeader, "Notes"}

// tableColumns returns the columns of a table of results, in order, without
// those whose cells are empty in every row.
func tableColumns(results []Result) []column {
	all := []column{
		{"System", func(r Result) string { return r.System }},
		{"Activities", func(r Result) string {
			if r.Activities == 0 {
				return ""
			}
			return formatInt(int64(r.Activities))
		}},
		{"Elapsed", func(r Result) string {
			if r.Elapsed == 0 {
				return ""
			}
			return formatDuration(r.Elapsed)
		}},
		{"Activities/s", func(r Result) string {
			return nonZero(r.ActivitiesPerSecond())
		}},
		{"p50 latency", func(r Result) string { return latency(r, 50) }},
		{"p99 latency", func(r Result) string { return latency(r, 99) }},
		{"DynamoDB requests/activity", ofDynamoDB(func(r Result) float64 { return float64(r.DynamoDBRequests()) })},
		{byOperationHeader, func(r Result) string { return byOperation(r, r.DynamoDB) }},
		{"WRU/activity", ofDynamoDB(func(r Result) float64 { return r.WRU })},
		{byItemHeader, byItem},
		{"RRU/activity", ofDynamoDB(func(r Result) float64 { return r.RRU })},
		{"SQS requests/activity", func(r Result) string {
			if r.SQS == nil {
				return ""
			}
			return perActivity(r, float64(r.SQSRequests()))
		}},
		{sqsByOperationHeader, func(r Result) string { return byOperation(r, r.SQS) }},
		{"$/million activities", ifNonZero(func(r Result) float64 { return r.Dollars * 1e6 })},
		{"$/million, provisioned at 70%", ifNonZero(func(r Result) float64 { return r.ProvisionedDollars * 1e6 })},
		{"Peer commands/activity", ifNonZero(func(r Result) float64 { return float64(r.PeerCommands) })},
		{"CPU ms/activity", ifNonZero(func(r Result) float64 { return r.CPU.Seconds() * 1e3 })},
	}
	for _, key := range extraKeys(results) {
		all = append(all, column{key, func(r Result) string {
			v, ok := r.Extra[key]
			if !ok {
				return ""
			}
			return formatNumber(v)
		}})
	}
	all = append(all, column{"Notes", func(r Result) string { return r.Notes }})

	var used []column
	for _, c := range all {
		if slices.ContainsFunc(results, func(r Result) bool { return c.cell(r) != "" }) {
			used = append(used, c)
		}
	}
	return used
}

// ofDynamoDB is the cell of a per-activity figure of the DynamoDB
// requests: empty for a system that made none.
func ofDynamoDB(v func(Result) float64) func(Result) string {
	return func(r Result) string {
		if r.DynamoDB == nil {
			return ""
		}
		return perActivity(r, v(r))
	}
}

// ifNonZero is the cell of a per-activity figure left empty when zero
// (not measured for that system).
func ifNonZero(v func(Result) float64) func(Result) string {
	return func(r Result) string {
		if v(r) == 0 {
			return ""
		}
		return perActivity(r, v(r))
	}
}

// byOperation formats counts per activity by operation name, in name
// order ("PutItem 1.2, Query 2.4"), leaving out operations never made; ""
// when there are none or no activity completed. It tells where a change of
// the requests per activity between runs came from.
func byOperation(r Result, counts map[string]int) string {
	if r.Activities == 0 {
		return ""
	}
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(counts)) {
		if n := counts[op]; n != 0 {
			parts = append(parts, op+" "+formatNumber(r.PerActivity(float64(n))))
		}
	}
	return strings.Join(parts, ", ")
}

// byItem formats r's write units per activity by item kind, largest first
// ("slot 3.85, lock 3.12"), leaving out kinds under 0.005; "" when not
// measured or no activity completed. It tells where the write units go.
func byItem(r Result) string {
	if r.Activities == 0 || len(r.WRUByItem) == 0 {
		return ""
	}
	kinds := slices.Sorted(maps.Keys(r.WRUByItem))
	slices.SortStableFunc(kinds, func(a, b string) int { return cmp.Compare(r.WRUByItem[b], r.WRUByItem[a]) })
	var parts []string
	for _, k := range kinds {
		if v := r.PerActivity(r.WRUByItem[k]); v >= 0.005 {
			parts = append(parts, k+" "+formatNumber(v))
		}
	}
	return strings.Join(parts, ", ")
}

// nonZero formats v, or returns "" when it is zero.
func nonZero(v float64) string {
	if v == 0 {
		return ""
	}
	return formatNumber(v)
}

// latency formats the p-th percentile of r's latencies; "" when there are
// none.
func latency(r Result, p float64) string {
	if len(r.Latencies) == 0 {
		return ""
	}
	return formatDuration(r.Latency(p))
}

// perActivity formats total divided by r's activities; "" when no activity
// completed (the figure is undefined).
func perActivity(r Result, total float64) string {
	if r.Activities == 0 {
		return ""
	}
	return formatNumber(r.PerActivity(total))
}

// extraKeys returns the names of the Extra figures of any result, sorted.
func extraKeys(results []Result) []string {
	var keys []string
	for _, r := range results {
		for k := range r.Extra {
			if !slices.Contains(keys, k) {
				keys = append(keys, k)
			}
		}
	}
	slices.Sort(keys)
	return keys
}

// markdownTable writes results as a markdown table, one row per result in
// order.
func markdownTable(results []Result) string {
	columns := tableColumns(results)
	var b strings.Builder
	row := func(cells []string) {
		b.WriteString("|")
		for _, c := range cells {
			b.WriteString(" ")
			b.WriteString(markdownCell(c))
			b.WriteString(" |")
		}
		b.WriteString("\n")
	}
	headers := make([]string, len(columns))
	rule := make([]string, len(columns))
	for i, c := range columns {
		headers[i] = c.header
		rule[i] = "---"
		if !slices.Contains(textColumns, c.header) {
			rule[i] = "---:"
		}
	}
	row(headers)
	b.WriteString("|")
	for _, r := range rule {
		b.WriteString(" " + r + " |")
	}
	b.WriteString("\n")
	for _, r := range results {
		cells := make([]string, len(columns))
		for i, c := range columns {
			cells[i] = c.cell(r)
		}
		row(cells)
	}
	return b.String()
}

// markdownCell makes s safe inside a table cell: one line, pipes escaped,
// and no HTML tags.
func markdownCell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	return cellEscaper.Replace(s)
}

var cellEscaper = strings.NewReplacer("|", `\|`, "<", "&lt;")
