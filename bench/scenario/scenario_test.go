package scenario

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/dynoxide/dynoxide/bench/billing"
)

func TestSelectKeepsTheOrderOfAllAndRejectsUnknownNames(t *testing.T) {
	all := All(ShortSizes())
	got, err := Select(all, " Idle, HelloCities5 ,")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range got {
		names = append(names, s.Name)
	}
	if want := []string{HelloCities5Name, IdleName}; !slices.Equal(names, want) {
		t.Errorf("selected %q, want %q", names, want)
	}
	if got, err := Select(all, ""); err != nil || len(got) != len(all) {
		t.Errorf("empty selection: %d scenarios, %v; want all %d", len(got), err, len(all))
	}
	if _, err := Select(all, "HelloCities5,Nope"); !errors.Is(err, ErrUnknownScenario) {
		t.Errorf("unknown name: err = %v, want ErrUnknownScenario", err)
	}
}

func TestRoundDownKeepsTwoSignificantDigits(t *testing.T) {
	for _, c := range []struct{ in, want int }{{7, 7}, {99, 99}, {123, 120}, {21874, 21000}, {100000, 100000}, {999999, 990000}} {
		if got := roundDown(c.in); got != c.want {
			t.Errorf("roundDown(%d) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestSanitizedSystemNamesAreValidTableNames(t *testing.T) {
	for _, s := range Systems() {
		name := sanitize(s.Name)
		for _, r := range name {
			if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
				t.Errorf("%q → %q keeps %q", s.Name, name, r)
			}
		}
	}
}

func TestSystemByNameFindsEverySystem(t *testing.T) {
	for _, s := range Systems() {
		got, err := SystemByName(s.Name)
		if err != nil || got.Name != s.Name {
			t.Errorf("SystemByName(%q) = %q, %v", s.Name, got.Name, err)
		}
	}
	if _, err := SystemByName("dynoxide/nope"); !errors.Is(err, ErrUnknownSystem) {
		t.Errorf("unknown system: err = %v, want ErrUnknownSystem", err)
	}
}

func TestMinimalRequestsAreTheWritesAndSends(t *testing.T) {
	ms := time.Millisecond
	u := billing.Usage{
		DynamoDB:     map[string]int{"PutItem": 3, "Query": 3, "TransactWriteItems": 3, "UpdateItem": 1},
		DynamoDBTime: map[string]time.Duration{"PutItem": 30 * ms, "Query": 60 * ms, "TransactWriteItems": 45 * ms, "UpdateItem": 9 * ms},
		SQS:          map[string]int{"SendMessageBatch": 3, "ReceiveMessage": 3, "DeleteMessageBatch": 3},
		SQSTime:      map[string]time.Duration{"SendMessageBatch": 33 * ms, "ReceiveMessage": 20 * time.Second, "DeleteMessageBatch": 30 * ms},
	}
	n, took := minimalRequests(u)
	if n != 10 || took != 117*ms {
		t.Errorf("minimalRequests = %d, %v; want 10 writes and sends taking 117ms", n, took)
	}
}
