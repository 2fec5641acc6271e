package jobs_test

import (
	"testing"

	"github.com/dynoxide/dynoxide/jobs"
	"github.com/dynoxide/dynoxide/jobs/jobstest"
)

func TestMemoryStore(t *testing.T) {
	jobstest.Run(t, func(*testing.T) jobs.Store { return jobs.NewMemoryStore() })
}
