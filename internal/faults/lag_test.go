package faults_test

import (
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/internal/faults"
	"github.com/duradyn/duradyn/tables"
)

// newLagFixture returns a fixture whose injector runs on a fake clock.
func newLagFixture(t *testing.T) (*fixture, *faults.Clock) {
	t.Helper()
	clock := faults.NewFakeClock(time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	return newFixture(t, func(o *faults.Options) { o.Now = clock.Now }), clock
}

// readyRow is a row in partition "R" of the ready index, with sort key
// rsk and extra string attributes.
func readyRow(sk, rsk string, attrs ...string) map[string]types.AttributeValue {
	it := row("q", sk, attrs...)
	it[tables.AttrReadyPK] = str("R")
	it[tables.AttrReadySK] = str(rsk)
	return it
}

// readyQuery returns the whole of partition "R" of the ready index.
func readyQuery(table string) *dynamodb.QueryInput {
	return &dynamodb.QueryInput{
		TableName:                 aws.String(table),
		IndexName:                 aws.String(tables.IndexReady),
		KeyConditionExpression:    aws.String("#rp = :rp"),
		ExpressionAttributeNames:  map[string]string{"#rp": tables.AttrReadyPK},
		ExpressionAttributeValues: map[string]types.AttributeValue{":rp": str("R")},
	}
}

// tags queries partition R through db and returns "sk=tag" per row.
func (f *fixture) tags(t *testing.T, db faults.DynamoDB) []string {
	t.Helper()
	out, err := db.Query(t.Context(), readyQuery(f.env.Table))
	if err != nil {
		t.Fatalf("Query: %v", err)
	}
	var got []string
	for _, it := range out.Items {
		got = append(got, attr(it, "sk")+"="+attr(it, tables.AttrTag))
	}
	return got
}

// awaitIndex waits until the real index shows want (the index is updated
// asynchronously on AWS).
func (f *fixture) awaitIndex(t *testing.T, want ...string) {
	t.Helper()
	await(t, fmt.Sprintf("the index to hold %v", want), func() bool { return slices.Equal(f.tags(t, f.env.DB), want) })
}

func TestIndexLag(t *testing.T) {
	t.Parallel()
	f, clock := newLagFixture(t)
	f.in.SetIndexLag(10*time.Second, 10*time.Second, tables.IndexReady)
	step := func(d time.Duration, want ...string) {
		t.Helper()
		clock.Advance(d)
		if got := f.tags(t, f.db); !slices.Equal(got, want) {
			t.Errorf("at +%v: the index shows %v, want %v", d, got, want)
		}
	}

	step(0) // the first query of the partition: it is empty

	t.Run("NewRowMissing", func(t *testing.T) {
		if err := f.put(t, f.env.DB, readyRow("a", "1", tables.AttrTag, "old")); err != nil {
			t.Fatal(err)
		}
		f.awaitIndex(t, "a=old")
		step(time.Second)
		step(10*time.Second, "a=old")
	})
	t.Run("ChangedRowStale", func(t *testing.T) {
		if err := f.put(t, f.env.DB, readyRow("a", "1", tables.AttrTag, "new")); err != nil {
			t.Fatal(err)
		}
		f.awaitIndex(t, "a=new")
		step(time.Second, "a=old")
		step(10*time.Second, "a=new")
	})
	t.Run("DeletedRowPresent", func(t *testing.T) {
		if _, err := f.env.DB.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(f.env.Table), Key: key("q", "a")}); err != nil {
			t.Fatal(err)
		}
		f.awaitIndex(t)
		step(time.Second, "a=new")
		step(10 * time.Second)
	})
	st := f.in.Stats()
	if n := st.Faults[faults.KindLaggedQuery]; n != 7 {
		t.Errorf("lagged queries counted %d, want 7 (%v)", n, st)
	}

	// Lag off: the index is read directly again.
	f.in.SetIndexLag(0, 0)
	if err := f.put(t, f.env.DB, readyRow("b", "2", tables.AttrTag, "now")); err != nil {
		t.Fatal(err)
	}
	f.awaitIndex(t, "b=now")
	if got := f.tags(t, f.db); !slices.Equal(got, []string{"b=now"}) {
		t.Errorf("lag off: %v", got)
	}
}

// scanTags scans the ready index through db with the given filter and
// limit and returns "rq_pk/sk=tag" per row and whether the page ended
// the index.
func (f *fixture) scanTags(t *testing.T, db faults.DynamoDB, filter string, values map[string]types.AttributeValue, limit int32) (got []string, whole bool) {
	t.Helper()
	in := &dynamodb.ScanInput{TableName: aws.String(f.env.Table), IndexName: aws.String(tables.IndexReady)}
	if filter != "" {
		in.FilterExpression = aws.String(filter)
		in.ExpressionAttributeNames = map[string]string{"#rp": tables.AttrReadyPK}
		in.ExpressionAttributeValues = values
	}
	if limit > 0 {
		in.Limit = aws.Int32(limit)
	}
	out, err := db.Scan(t.Context(), in)
	if err != nil {
		t.Fatalf("Scan: %v", err)
	}
	for _, it := range out.Items {
		got = append(got, attr(it, tables.AttrReadyPK)+"/"+attr(it, "sk")+"="+attr(it, tables.AttrTag))
	}
	slices.Sort(got)
	return got, len(out.LastEvaluatedKey) == 0
}

// TestIndexLag_Scan checks that a scan of a lagging index sees each
// partition as a query of it would: rows written within the lag missing,
// rows deleted within it present, in partitions that queries or scans
// have seen before; and that Limit, LastEvaluatedKey and a filter on the
// index's keys apply to that view.
func TestIndexLag_Scan(t *testing.T) {
	t.Parallel()
	f, clock := newLagFixture(t)
	f.in.SetIndexLag(10*time.Second, 10*time.Second, tables.IndexReady)
	scan := func(d time.Duration, want ...string) {
		t.Helper()
		clock.Advance(d)
		if got, whole := f.scanTags(t, f.db, "", nil, 0); !slices.Equal(got, want) || !whole {
			t.Errorf("at +%v: the scan shows %v (whole %v), want %v", d, got, whole, want)
		}
	}
	f.tags(t, f.db) // partition R is known: empty
	if err := f.put(t, f.env.DB, readyRow("a", "1", tables.AttrTag, "x")); err != nil {
		t.Fatal(err)
	}
	f.awaitIndex(t, "a=x")
	scan(time.Second)
	scan(10*time.Second, "R/a=x")

	// A second partition, first seen by this scan: it shows as it is.
	other := readyRow("b", "1", tables.AttrTag, "y")
	other[tables.AttrReadyPK] = str("S")
	if err := f.put(t, f.env.DB, other); err != nil {
		t.Fatal(err)
	}
	await(t, "the index to hold S/b", func() bool {
		got, _ := f.scanTags(t, f.env.DB, "", nil, 0)
		return len(got) == 2
	})
	scan(time.Second, "R/a=x", "S/b=y")

	// Limit counts the rows evaluated; the filter may name a key.
	if got, whole := f.scanTags(t, f.db, "", nil, 1); len(got) != 1 || whole {
		t.Errorf("Limit 1 of 2 rows: %v, whole %v; want one row and a LastEvaluatedKey", got, whole)
	}
	if got, whole := f.scanTags(t, f.db, "begins_with(#rp, :p)", map[string]types.AttributeValue{":p": str("S")}, 0); !slices.Equal(got, []string{"S/b=y"}) || !whole {
		t.Errorf("filter on the index's partition key: %v, whole %v; want [S/b=y]", got, whole)
	}

	// A row deleted within the lag is still there, also in a partition
	// the real index no longer has.
	for _, k := range []map[string]types.AttributeValue{key("q", "a"), key("q", "b")} {
		if _, err := f.env.DB.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: aws.String(f.env.Table), Key: k}); err != nil {
			t.Fatal(err)
		}
	}
	await(t, "the index to be empty", func() bool {
		got, _ := f.scanTags(t, f.env.DB, "", nil, 0)
		return len(got) == 0
	})
	scan(time.Second, "R/a=x", "S/b=y")
	scan(10 * time.Second)
	if n := f.in.Stats().Ops[faults.OpScan].Faults[faults.KindLaggedQuery]; n == 0 {
		t.Errorf("no lagged scan counted: %v", f.in.Stats())
	}
}

// TestIndexLag_Random checks that a lag drawn from a range never shows a
// row before it was written and always shows it once the longest lag has
// passed.
func TestIndexLag_Random(t *testing.T) {
	t.Parallel()
	f, clock := newLagFixture(t)
	f.in.SetIndexLag(0, 5*time.Second)
	f.tags(t, f.db)
	clock.Advance(time.Second)
	if err := f.put(t, f.env.DB, readyRow("a", "1")); err != nil {
		t.Fatal(err)
	}
	f.awaitIndex(t, "a=")
	written := clock.Now()
	seen := map[bool]int{}
	for range 20 {
		clock.Advance(500 * time.Millisecond)
		got := len(f.tags(t, f.db)) == 1
		seen[got]++
		if !got && clock.Now().Sub(written) > 5*time.Second {
			t.Errorf("%v after the write, beyond the longest lag, the row is missing", clock.Now().Sub(written))
		}
	}
	if seen[true] == 0 || seen[false] == 0 {
		t.Errorf("visible %d times, missing %d times: want both", seen[true], seen[false])
	}
}

// TestIndexLag_Evaluator runs queries against the real index and against
// the lag model's snapshot of the same data, which must agree page by
// page.
func TestIndexLag_Evaluator(t *testing.T) {
	t.Parallel()
	f, clock := newLagFixture(t)
	f.in.SetIndexLag(time.Second, time.Second, tables.IndexReady)
	for i := range 12 {
		it := readyRow(fmt.Sprintf("s%02d", i), fmt.Sprintf("k%02d", i))
		it[tables.AttrVis] = num(fmt.Sprint(100 - 7*i))
		if i%3 != 0 {
			it[tables.AttrTag] = str([]string{"alpha", "beta", "alps"}[i%3])
		}
		if i%4 == 0 {
			it[tables.AttrSession] = str("sess")
		}
		it["unprojected"] = str("x")
		if err := f.put(t, f.env.DB, it); err != nil {
			t.Fatal(err)
		}
	}
	await(t, "the index to hold 12 rows", func() bool { return len(f.tags(t, f.env.DB)) == 12 })
	f.tags(t, f.db) // the snapshot the next queries see
	clock.Advance(time.Minute)

	names := map[string]string{"#rp": tables.AttrReadyPK, "#rs": tables.AttrReadySK, "#tag": tables.AttrTag, "#vis": tables.AttrVis, "#session": tables.AttrSession}
	type query struct {
		key, filter, projection string
		values                  map[string]types.AttributeValue
		backward                bool
		limit                   int32
		sel                     types.Select
	}
	cases := map[string]query{
		"partition":         {key: "#rp = :rp"},
		"less":              {key: "#rp = :rp AND #rs < :a", values: map[string]types.AttributeValue{":a": str("k05")}},
		"reversed operands": {key: "#rs <= :a AND #rp = :rp", values: map[string]types.AttributeValue{":a": str("k05")}},
		"greater":           {key: "#rp = :rp AND #rs > :a", values: map[string]types.AttributeValue{":a": str("k05")}},
		"greater or equal":  {key: "#rp = :rp AND (#rs >= :a)", values: map[string]types.AttributeValue{":a": str("k05")}},
		"equal":             {key: "#rp = :rp AND #rs = :a", values: map[string]types.AttributeValue{":a": str("k05")}},
		"between":           {key: "#rp = :rp AND #rs BETWEEN :a AND :b", values: map[string]types.AttributeValue{":a": str("k03"), ":b": str("k08")}},
		"begins_with":       {key: "#rp = :rp AND begins_with(#rs, :a)", values: map[string]types.AttributeValue{":a": str("k1")}},
		"backward":          {key: "#rp = :rp", backward: true},
		"pages":             {key: "#rp = :rp", limit: 5},
		"pages backward":    {key: "#rp = :rp AND #rs < :a", values: map[string]types.AttributeValue{":a": str("k10")}, backward: true, limit: 3},
		"numeric filter":    {key: "#rp = :rp", filter: "#vis > :n", values: map[string]types.AttributeValue{":n": num("50")}},
		"filtered pages":    {key: "#rp = :rp", filter: "attribute_exists(#tag) AND #vis >= :n", values: map[string]types.AttributeValue{":n": num("3.5e1")}, limit: 4},
		"or not":            {key: "#rp = :rp", filter: "#tag <> :t OR NOT attribute_exists(#session)", values: map[string]types.AttributeValue{":t": str("beta")}},
		"not equal missing": {key: "#rp = :rp", filter: "#tag <> :t", values: map[string]types.AttributeValue{":t": str("alpha")}},
		"filter between":    {key: "#rp = :rp", filter: "#vis BETWEEN :lo AND :hi AND attribute_not_exists(#session)", values: map[string]types.AttributeValue{":lo": num("30"), ":hi": num("80")}},
		"filter prefix":     {key: "#rp = :rp", filter: "begins_with(#tag, :p)", values: map[string]types.AttributeValue{":p": str("al")}},
		"mixed types":       {key: "#rp = :rp", filter: "#vis < :s OR #tag = :n", values: map[string]types.AttributeValue{":s": str("9"), ":n": num("1")}},
		"projection":        {key: "#rp = :rp", projection: "#tag, #vis", filter: "#vis < :n", values: map[string]types.AttributeValue{":n": num("60")}},
		"count":             {key: "#rp = :rp", filter: "attribute_exists(#session)", sel: types.SelectCount},
		"count pages":       {key: "#rp = :rp", sel: types.SelectCount, limit: 5},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			q := readyQuery(f.env.Table)
			q.KeyConditionExpression = aws.String(c.key)
			q.ExpressionAttributeNames = map[string]string{}
			q.ExpressionAttributeValues = map[string]types.AttributeValue{":rp": str("R")}
			for k, v := range c.values {
				q.ExpressionAttributeValues[k] = v
			}
			text := c.key + " " + c.filter + " " + c.projection
			for k, v := range names {
				if hasPlaceholder(text, k) {
					q.ExpressionAttributeNames[k] = v
				}
			}
			if c.filter != "" {
				q.FilterExpression = aws.String(c.filter)
			}
			if c.projection != "" {
				q.ProjectionExpression = aws.String(c.projection)
			}
			if c.backward {
				q.ScanIndexForward = aws.Bool(false)
			}
			if c.limit > 0 {
				q.Limit = aws.Int32(c.limit)
			}
			q.Select = c.sel
			want, got := pages(t, f.env.DB, q), pages(t, f.db, q)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("lag model:\n%v\nDynamoDB:\n%v", got, want)
			}
		})
	}
}

// hasPlaceholder reports whether placeholder p occurs in text as a whole
// word.
func hasPlaceholder(text, p string) bool {
	for i := 0; i+len(p) <= len(text); i++ {
		if text[i:i+len(p)] == p && (i+len(p) == len(text) || !isWord(text[i+len(p)])) {
			return true
		}
	}
	return false
}

func isWord(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// page is what a test compares of one page of a query.
type page struct {
	Items             []string
	Count, Scanned    int32
	LastEvaluatedSort string
}

func (p page) String() string {
	return fmt.Sprintf("%v count %d scanned %d last %q", p.Items, p.Count, p.Scanned, p.LastEvaluatedSort)
}

// pages runs q through db to its last page.
func pages(t *testing.T, db faults.DynamoDB, q *dynamodb.QueryInput) []page {
	t.Helper()
	in := *q
	var out []page
	for {
		res, err := db.Query(t.Context(), &in)
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		p := page{Count: res.Count, Scanned: res.ScannedCount, LastEvaluatedSort: attr(res.LastEvaluatedKey, tables.AttrReadySK)}
		for _, it := range res.Items {
			var parts []string
			for _, k := range slices.Sorted(maps.Keys(it)) {
				switch v := it[k].(type) {
				case *types.AttributeValueMemberS:
					parts = append(parts, k+"="+v.Value)
				case *types.AttributeValueMemberN:
					parts = append(parts, k+"=N"+v.Value)
				default:
					parts = append(parts, fmt.Sprintf("%s=%T", k, v))
				}
			}
			p.Items = append(p.Items, fmt.Sprint(parts))
		}
		if len(res.LastEvaluatedKey) > 0 && len(res.LastEvaluatedKey) != 4 {
			t.Errorf("LastEvaluatedKey %v: want the index and table keys", res.LastEvaluatedKey)
		}
		out = append(out, p)
		if len(res.LastEvaluatedKey) == 0 || len(out) > 20 {
			return out
		}
		in.ExclusiveStartKey = res.LastEvaluatedKey
	}
}

// TestIndexLag_Errors checks that what the model cannot evaluate fails
// loudly, and that invalid requests fail as DynamoDB fails them.
func TestIndexLag_Errors(t *testing.T) {
	t.Parallel()
	f, _ := newLagFixture(t)
	f.in.SetIndexLag(time.Second, time.Second)
	for name, tc := range map[string]struct {
		mutate      func(*dynamodb.QueryInput)
		unsupported bool
	}{
		"contains": {func(q *dynamodb.QueryInput) {
			q.FilterExpression = aws.String("contains(#t, :x)")
			q.ExpressionAttributeNames["#t"] = tables.AttrTag
			q.ExpressionAttributeValues[":x"] = str("a")
		}, true},
		"nested path": {func(q *dynamodb.QueryInput) {
			q.FilterExpression = aws.String("#t.#u = :x")
			q.ExpressionAttributeNames["#t"] = tables.AttrTag
			q.ExpressionAttributeNames["#u"] = "u"
			q.ExpressionAttributeValues[":x"] = str("a")
		}, true},
		"IN": {func(q *dynamodb.QueryInput) {
			q.FilterExpression = aws.String("#t IN (:x)")
			q.ExpressionAttributeNames["#t"] = tables.AttrTag
			q.ExpressionAttributeValues[":x"] = str("a")
		}, true},
		"legacy filter": {func(q *dynamodb.QueryInput) {
			q.QueryFilter = map[string]types.Condition{tables.AttrTag: {ComparisonOperator: types.ComparisonOperatorNotNull}}
		}, true},
		"unused value": {func(q *dynamodb.QueryInput) {
			q.ExpressionAttributeValues[":unused"] = str("a")
		}, false},
		"undefined name": {func(q *dynamodb.QueryInput) {
			q.FilterExpression = aws.String("attribute_exists(#nope)")
		}, false},
		"filter on key": {func(q *dynamodb.QueryInput) {
			q.FilterExpression = aws.String("#rp = :rp")
		}, false},
		"consistent read": {func(q *dynamodb.QueryInput) { q.ConsistentRead = aws.Bool(true) }, false},
		"or in key condition": {func(q *dynamodb.QueryInput) {
			q.KeyConditionExpression = aws.String("#rp = :rp OR #rp = :x")
			q.ExpressionAttributeValues[":x"] = str("a")
		}, false},
		"syntax": {func(q *dynamodb.QueryInput) { q.KeyConditionExpression = aws.String("#rp = = :rp") }, false},
	} {
		t.Run(name, func(t *testing.T) {
			q := readyQuery(f.env.Table)
			tc.mutate(q)
			_, err := f.db.Query(t.Context(), q)
			if code := wantOpError(t, err, "DynamoDB", "Query"); code != "ValidationException" {
				t.Errorf("code %q, want ValidationException", code)
			}
			var api smithy.APIError
			if errors.As(err, &api) && api.ErrorFault() != smithy.FaultClient {
				t.Errorf("fault %v, want a client fault", api.ErrorFault())
			}
			if got := errors.Is(err, faults.ErrUnsupported); got != tc.unsupported {
				t.Errorf("errors.Is(%v, ErrUnsupported) = %v", err, got)
			}
			t.Log(err)
		})
	}
}

func TestSetIndexLag_Panics(t *testing.T) {
	t.Parallel()
	for name, set := range map[string]func(*faults.Injector){
		"unknown index": func(in *faults.Injector) { in.SetIndexLag(0, time.Second, "nope") },
		"negative":      func(in *faults.Injector) { in.SetIndexLag(-time.Second, time.Second) },
		"reversed":      func(in *faults.Injector) { in.SetIndexLag(2*time.Second, time.Second) },
	} {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Error("no panic")
				}
			}()
			set(faults.New(1))
		})
	}
}
