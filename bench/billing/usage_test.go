package billing_test

import (
	"maps"
	"math"
	"testing"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
)

func approxEqual(a, b float64) bool { return math.Abs(a-b) <= 1e-12*math.Max(1, math.Abs(b)) }

func TestUsage_Sub(t *testing.T) {
	before := billing.Usage{DynamoDB: map[string]int{"GetItem": 2, "Query": 1}, WRU: 3, RRU: 1.5,
		SQS: map[string]int{"SendMessage": 1}, SQSBilled: 1}
	after := billing.Usage{DynamoDB: map[string]int{"GetItem": 5, "Query": 1, "PutItem": 2}, WRU: 10, RRU: 2,
		SQS: map[string]int{"SendMessage": 3, "ReceiveMessage": 1}, SQSBilled: 6}
	d := after.Sub(before)
	if want := map[string]int{"GetItem": 3, "PutItem": 2}; !maps.Equal(d.DynamoDB, want) {
		t.Errorf("DynamoDB = %v, want %v", d.DynamoDB, want)
	}
	if want := map[string]int{"SendMessage": 2, "ReceiveMessage": 1}; !maps.Equal(d.SQS, want) {
		t.Errorf("SQS = %v, want %v", d.SQS, want)
	}
	if d.WRU != 7 || d.RRU != 0.5 || d.SQSBilled != 5 {
		t.Errorf("WRU %v, RRU %v, SQSBilled %d; want 7, 0.5, 5", d.WRU, d.RRU, d.SQSBilled)
	}
	if d.DynamoDBRequests() != 5 || d.SQSRequests() != 3 {
		t.Errorf("requests: DynamoDB %d, SQS %d; want 5 and 3", d.DynamoDBRequests(), d.SQSRequests())
	}
	if got := (billing.Usage{}).Sub(billing.Usage{}); got.DynamoDBRequests() != 0 || got.WRU != 0 {
		t.Errorf("zero minus zero = %+v", got)
	}
}

func TestUsage_TimesSubAndMean(t *testing.T) {
	before := billing.Usage{DynamoDB: map[string]int{"PutItem": 1}, DynamoDBTime: map[string]time.Duration{"PutItem": 4 * time.Millisecond}}
	after := billing.Usage{DynamoDB: map[string]int{"PutItem": 4, "Query": 1},
		DynamoDBTime: map[string]time.Duration{"PutItem": 16 * time.Millisecond, "Query": 3 * time.Millisecond},
		SQS:          map[string]int{"SendMessage": 2}, SQSTime: map[string]time.Duration{"SendMessage": 10 * time.Millisecond}}
	d := after.Sub(before)
	if want := map[string]time.Duration{"PutItem": 12 * time.Millisecond, "Query": 3 * time.Millisecond}; !maps.Equal(d.DynamoDBTime, want) {
		t.Errorf("DynamoDBTime = %v, want %v", d.DynamoDBTime, want)
	}
	for _, c := range []struct {
		dynamoDB bool
		op       string
		want     time.Duration
		ok       bool
	}{{true, "PutItem", 4 * time.Millisecond, true}, {true, "Query", 3 * time.Millisecond, true}, {false, "SendMessage", 5 * time.Millisecond, true}, {true, "GetItem", 0, false}} {
		if got, ok := d.MeanTime(c.dynamoDB, c.op); got != c.want || ok != c.ok {
			t.Errorf("MeanTime(%v, %s) = %v, %v; want %v, %v", c.dynamoDB, c.op, got, ok, c.want, c.ok)
		}
	}
	if got := (billing.Usage{}).Sub(billing.Usage{}); got.DynamoDBTime != nil || got.SQSTime != nil {
		t.Errorf("zero minus zero = %+v", got)
	}
}

func TestUsage_Dollars(t *testing.T) {
	u := billing.Usage{WRU: 1e6, RRU: 2e6, SQSBilled: 3e6}
	if got, want := u.Dollars(), 0.625+2*0.125+3*0.40; !approxEqual(got, want) {
		t.Errorf("Dollars = %v, want %v", got, want)
	}
}

func TestUsage_ProvisionedDollars(t *testing.T) {
	u := billing.Usage{WRU: 3.6e6, RRU: 7.2e6, SQSBilled: 1e6}
	// 3.6 million WRU are 1,000 WCU-hours consumed, 2,000 paid at 50%.
	want := 2000*0.00065 + 4000*0.00013 + 0.40
	if got := u.ProvisionedDollars(0.5); !approxEqual(got, want) {
		t.Errorf("ProvisionedDollars(0.5) = %v, want %v", got, want)
	}
	if full, half := u.ProvisionedDollars(1), u.ProvisionedDollars(0.5); !(full < half) {
		t.Errorf("ProvisionedDollars(1) = %v, not below ProvisionedDollars(0.5) = %v", full, half)
	}
}
