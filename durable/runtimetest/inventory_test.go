package runtimetest

import (
	"strings"
	"testing"
)

// wantTests pins the number of ported tests per category, so that a test
// lost in an edit fails here rather than silently shrinking the suite.
var wantTests = map[string]int{
	"Samples":             35,
	"Composition":         31,
	"Timers":              9,
	"Retry":               44,
	"SystemCalls":         11,
	"ContinueAsNew":       7,
	"Errors":              17,
	"Nondeterminism":      8,
	"OrchestrationStatus": 8,
	"Cancellation":        26,
	"ExternalEvents":      16,
	"CustomStatus":        15,
	"KV":                  65,
	"Poison":              19,
	"Reliability":         30,
	"Sessions":            23,
	"Tags":                11,
	"Versioning":          36,
	"Management":          39,
	"Scenarios":           28,
}

func TestInventory(t *testing.T) {
	cats := Categories()
	if len(cats) != len(wantTests) {
		t.Errorf("%d categories, want %d", len(cats), len(wantTests))
	}
	total := 0
	for _, c := range cats {
		want, ok := wantTests[c.Name]
		if !ok {
			t.Errorf("category %s is not pinned", c.Name)
		}
		if len(c.Tests) != want {
			t.Errorf("category %s has %d tests, want %d", c.Name, len(c.Tests), want)
		}
		seen := map[string]bool{}
		for _, test := range c.Tests {
			if test.Name == "" || test.Run == nil {
				t.Errorf("category %s: a test without a name or body", c.Name)
			}
			if seen[test.Name] {
				t.Errorf("category %s: %s twice", c.Name, test.Name)
			}
			seen[test.Name] = true
		}
		total += len(c.Tests)
	}
	if total != 478 {
		t.Errorf("%d tests in all, want 478", total)
	}
}

// TestExactDeliveryNamesExist keeps ExactDelivery in step with the tests.
func TestExactDeliveryNamesExist(t *testing.T) {
	names := map[string]bool{}
	for _, c := range Categories() {
		names[c.Name] = true
		for _, test := range c.Tests {
			names[c.Name+"/"+test.Name] = true
		}
	}
	for name := range ExactDelivery {
		if !names[name] {
			t.Errorf("ExactDelivery names %s, which is not a test", name)
		}
	}
}

// TestFactoryCategories: a factory naming categories runs those, in the
// suite's order; one naming no category runs all; an unknown name fails.
func TestFactoryCategories(t *testing.T) {
	cats, err := Factory{Categories: []string{"Timers", "Samples"}}.categories()
	if err != nil || len(cats) != 2 || cats[0].Name != "Samples" || cats[1].Name != "Timers" {
		t.Errorf("Samples and Timers: got %d categories, %v; want Samples, Timers", len(cats), err)
	}
	if all, err := (Factory{}).categories(); err != nil || len(all) != len(Categories()) {
		t.Errorf("no names: got %d categories, %v; want all %d", len(all), err, len(Categories()))
	}
	if _, err := (Factory{Categories: []string{"Timer"}}).categories(); err == nil || !strings.Contains(err.Error(), `"Timer"`) {
		t.Errorf("an unknown name: %v; want an error naming it", err)
	}
}
