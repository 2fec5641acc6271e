package jobs_test

import (
	"testing"

	"github.com/duradyn/duradyn/jobs"
	"github.com/duradyn/duradyn/jobs/jobstest"
)

func TestMemoryStore(t *testing.T) {
	jobstest.Run(t, func(*testing.T) jobs.Store { return jobs.NewMemoryStore() })
}
