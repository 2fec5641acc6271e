package jobstest_test

import (
	"testing"

	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/jobs/jobstest"
)

// A job store's tests run the whole suite from one test; each subtest gets
// a fresh store from the factory. Here the in-memory store stands in for
// the store under test.
func ExampleRun() {
	testStore := func(t *testing.T) {
		jobstest.Run(t, func(t *testing.T) jobs.Store { return jobs.NewMemoryStore() })
	}
	_ = testStore // in a _test.go file: func TestStore(t *testing.T) { ... }
}
