package providertest

import (
	"regexp"
	"testing"
)

// contractCounts is the number of tests per category in duroxide's provider
// validation suite (contract §3.4). The suite must cover every one of them:
// a lost or merged test makes this test fail.
var contractCounts = map[string]int{
	"Atomicity":           4,
	"BulkDeletion":        4,
	"Cancellation":        16,
	"CapabilityFiltering": 20,
	"CustomStatus":        7,
	"Deletion":            13,
	"ErrorHandling":       7,
	"InstanceCreation":    4,
	"InstanceLocking":     11,
	"KVStore":             35,
	"LockExpiration":      13,
	"LongPolling":         5,
	"Management":          13,
	"MultiExecution":      5,
	"PoisonMessage":       9,
	"Prune":               4,
	"QueueSemantics":      8,
	"Sessions":            33,
	"TagFiltering":        10,
}

// ownCategories are dynoxide's additions; they have no contract count.
var ownCategories = map[string]bool{"InputValidation": true}

func TestInventoryMatchesContract(t *testing.T) {
	total := 0
	seen := map[string]bool{}
	for _, c := range categories() {
		if ownCategories[c.name] {
			if len(c.tests) == 0 {
				t.Errorf("category %s has no tests", c.name)
			}
			continue
		}
		want, ok := contractCounts[c.name]
		if !ok {
			t.Errorf("category %s is neither a contract category nor one of dynoxide's own", c.name)
			continue
		}
		if len(c.tests) != want {
			t.Errorf("category %s has %d tests, contract §3.4 lists %d", c.name, len(c.tests), want)
		}
		total += len(c.tests)
		seen[c.name] = true
	}
	for name := range contractCounts {
		if !seen[name] {
			t.Errorf("contract category %s is missing from the suite", name)
		}
	}
	if total != 221 {
		t.Errorf("suite covers %d contract tests, want 221", total)
	}
}

func TestInventoryNamesAreUniqueAndGoStyle(t *testing.T) {
	goName := regexp.MustCompile(`^[A-Z][A-Za-z0-9]*$`)
	for _, c := range categories() {
		names := map[string]bool{}
		for _, tc := range c.tests {
			if !goName.MatchString(tc.name) {
				t.Errorf("%s/%s: test names are CamelCase Go identifiers", c.name, tc.name)
			}
			if names[tc.name] {
				t.Errorf("%s/%s: duplicate test name", c.name, tc.name)
			}
			if tc.run == nil {
				t.Errorf("%s/%s: no test function", c.name, tc.name)
			}
			names[tc.name] = true
		}
	}
}
