package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/duradyn/duradyn/bench/billing"
	"github.com/duradyn/duradyn/bench/report"
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

// TestMakeBenchE2ERunsEveryScenario holds the repository's make target to
// the list of scenarios: a scenario added here and not there would be
// missing from the committed results.
func TestMakeBenchE2ERunsEveryScenario(t *testing.T) {
	makefile, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, line := range strings.Split(string(makefile), "\n") {
		if _, list, ok := strings.Cut(line, "-scenarios "); ok {
			listed = strings.Split(strings.TrimSpace(list), ",")
		}
	}
	var names []string
	for _, s := range All(DefaultSizes()) {
		names = append(names, s.Name)
	}
	if !slices.Equal(listed, names) {
		t.Errorf("make bench-e2e runs %q, want every scenario in order: %q", listed, names)
	}
}

func TestSizesValidateRejectsWhatNoScenarioCanRun(t *testing.T) {
	for _, s := range []Sizes{DefaultSizes(), ShortSizes()} {
		if err := s.Validate(); err != nil {
			t.Errorf("%+v: %v", s, err)
		}
	}
	zeroPayload := ShortSizes()
	zeroPayload.PayloadBytes = 0
	if err := zeroPayload.Validate(); err != nil {
		t.Errorf("payload of 0 bytes: %v", err)
	}
	for name, edit := range map[string]func(*Sizes){
		"ChainSteps":      func(s *Sizes) { s.ChainSteps = 0 },
		"PayloadBytes":    func(s *Sizes) { s.PayloadBytes = -1 },
		"HelloInstances":  func(s *Sizes) { s.HelloInstances = -3 },
		"HelloRuntimes":   func(s *Sizes) { s.HelloRuntimes.Slots = -1 },
		"LoadInstances":   func(s *Sizes) { s.LoadInstances = 0 },
		"IdleBeforeStart": func(s *Sizes) { s.IdleBeforeStart = -time.Second },
	} {
		s := ShortSizes()
		edit(&s)
		err := s.Validate()
		if !errors.Is(err, ErrBadSize) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: err = %v, want ErrBadSize naming it", name, err)
		}
	}
}

func TestRuntimesSayWhatRuns(t *testing.T) {
	for _, c := range []struct {
		rt   Runtimes
		want string
	}{
		{Runtimes{}, "runtime with default options (2 orchestration and 2 worker slots)"},
		{Runtimes{Count: 1, Slots: 8}, "runtime with 8 orchestration and 8 worker slots, other options default"},
		{Runtimes{Count: 2}, "2 runtimes on one table, each with its own provider and default options (2 orchestration and 2 worker slots)"},
	} {
		if got := c.rt.String(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.rt, got, c.want)
		}
	}
}

func TestLoadVariantsAreNamedByWhatRuns(t *testing.T) {
	var got []string
	for _, rt := range LoadVariants() {
		got = append(got, rt.Label())
	}
	want := []string{"1 runtime, 2+2 slots", "1 runtime, 8+8 slots", "2 runtimes, 2+2 slots"}
	if !slices.Equal(got, want) {
		t.Errorf("labels %q, want %q", got, want)
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
	if _, err := SystemByName("duradyn/nope"); !errors.Is(err, ErrUnknownSystem) {
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

func TestPayloadScenarioNamesSayTheSize(t *testing.T) {
	for got, want := range map[string]string{
		HelloCities5PayloadName(1024): "HelloCities5Payload1KB",
		HelloCities5PayloadName(100):  "HelloCities5Payload100B",
		ChainPayloadName(1000, 1024):  "Chain1000Payload1KB",
		ChainPayloadName(20, 3*1024):  "Chain20Payload3KB",
		ChainPayloadName(20, 1500):    "Chain20Payload1500B",
	} {
		if got != want {
			t.Errorf("name %q, want %q", got, want)
		}
	}
}

func TestTimesFromTakesTheUnmeteredRunsTimesAndKeepsTheMeteredCosts(t *testing.T) {
	metered := report.Result{
		Scenario: HelloCities5Name, System: DynamoDBSQS, Activities: 10,
		Elapsed: 2 * time.Second, Latencies: []time.Duration{time.Second, 2 * time.Second}, CPU: 3 * time.Second,
		DynamoDB: map[string]int{"Query": 12}, WRU: 170, RRU: 10, Dollars: 0.0001,
		Notes: "metered", Extra: map[string]float64{ExtraInstances: 2},
	}
	unmetered := report.Result{
		Scenario: HelloCities5Name, System: DynamoDBSQS, Activities: 10,
		Elapsed: time.Second, Latencies: []time.Duration{500 * time.Millisecond, time.Second}, CPU: time.Second,
		Notes: "unmetered", Extra: map[string]float64{ExtraInstances: 2},
	}
	r, err := timesFrom(metered, unmetered)
	if err != nil {
		t.Fatal(err)
	}
	if r.Elapsed != unmetered.Elapsed || !slices.Equal(r.Latencies, unmetered.Latencies) || r.CPU != unmetered.CPU {
		t.Errorf("times %v %v %v, want the unmetered run's %v %v %v", r.Elapsed, r.Latencies, r.CPU, unmetered.Elapsed, unmetered.Latencies, unmetered.CPU)
	}
	if r.DynamoDB["Query"] != 12 || r.WRU != 170 || r.RRU != 10 || r.Dollars != 0.0001 {
		t.Errorf("costs %v %v %v %v, want the metered run's", r.DynamoDB, r.WRU, r.RRU, r.Dollars)
	}
	if got := r.Extra[ExtraMeteredRate]; got != 5 {
		t.Errorf("%s = %v, want the metered run's 5 activities a second", ExtraMeteredRate, got)
	}
	if _, ok := metered.Extra[ExtraMeteredRate]; ok {
		t.Error("the metered result's extras were changed in place")
	}
	if !strings.HasPrefix(r.Notes, "metered; ") || !strings.Contains(r.Notes, "without the meter") {
		t.Errorf("notes %q do not keep the metered run's and say where the times come from", r.Notes)
	}

	unmetered.Activities = 9
	if _, err := timesFrom(metered, unmetered); err == nil {
		t.Error("runs that completed different activities were merged")
	}
}
