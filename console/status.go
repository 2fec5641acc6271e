package console

import (
	"context"
	"strings"
	"time"

	"github.com/duradyn/duradyn/provider"
)

// Display statuses that are not stored as such: provider.StatusPending is
// an instance started and not yet fetched by any runtime;
// provider.StatusCanceled is a failed instance whose failure is a
// cancellation.
const (
	statusPending  = provider.StatusPending
	statusCanceled = provider.StatusCanceled
)

// statusFilters are the statuses the list filters by, in the order shown.
var statusFilters = []string{
	statusPending, provider.StatusRunning, provider.StatusCompleted, provider.StatusFailed,
	statusCanceled, provider.StatusContinuedAsNew,
}

// displayStatus maps what the store says about an instance to the status
// the console shows: provider.DisplayStatus of its stored status and
// output, or, when the history was read, Canceled for a failure that is a
// cancellation.
func displayStatus(status string, failure provider.ErrorDetails, output *string) string {
	if app, ok := failure.(provider.ApplicationDetails); ok && status == provider.StatusFailed {
		if app.Kind.Code == provider.AppCancelled {
			return statusCanceled
		}
		return status
	}
	return provider.DisplayStatus(status, output)
}

// storedStatus is the stored status a display status is listed by.
func storedStatus(display string) string {
	if display == statusCanceled {
		return provider.StatusFailed
	}
	return display
}

// statusClass is the CSS class of a display status.
func statusClass(display string) string {
	switch display {
	case provider.StatusRunning, statusPending, provider.StatusCompleted, provider.StatusFailed,
		statusCanceled, provider.StatusContinuedAsNew:
		return "st-" + strings.ToLower(display)
	}
	return "st-other"
}

// statusCounts counts instances per status, from [provider.SystemMetrics]:
// Failed without the canceled ones, which Canceled counts; Pending the
// queued starts no turn has taken yet ([provider.SystemMetrics.PendingInstances]);
// Total, like the unfiltered list, the pending ones as well.
type statusCounts struct {
	Total, Pending, Running, Completed, Failed, Canceled, Other uint64
	At                                                          time.Time
	Err                                                         string
}

// countsOf maps the store's figures to the counts shown.
func countsOf(m provider.SystemMetrics, at time.Time) statusCounts {
	counts := statusCounts{
		Total: m.TotalInstances + m.PendingInstances, Pending: m.PendingInstances,
		Running: m.RunningInstances, Completed: m.CompletedInstances,
		// Canceled instances are among the failed ones; a store that
		// counted more of them than failures would be wrong, not negative.
		Failed: m.FailedInstances - min(m.CanceledInstances, m.FailedInstances), Canceled: min(m.CanceledInstances, m.FailedInstances),
		At: at,
	}
	if known := m.RunningInstances + m.CompletedInstances + m.FailedInstances; known < m.TotalInstances {
		counts.Other = m.TotalInstances - known
	}
	return counts
}

// countsNow returns the counts per status, read again when those held are
// older than Options.CountsMaxAge. A failure is shown, not fatal, and not
// held: the next load reads again.
func (c *Console) countsNow(ctx context.Context) statusCounts {
	c.countsMu.Lock()
	defer c.countsMu.Unlock()
	now := c.o.Now()
	if c.counts != nil && now.Sub(c.counts.At) < c.o.CountsMaxAge {
		return *c.counts
	}
	m, err := c.admin.SystemMetrics(ctx)
	if err != nil {
		c.o.Logger.Warn("console: system metrics", "err", err)
		return statusCounts{At: now, Err: errText(err)}
	}
	counts := countsOf(m, now)
	c.counts = &counts
	return counts
}

// forgetCounts makes the next list read the counts again (after an
// action).
func (c *Console) forgetCounts() {
	c.countsMu.Lock()
	c.counts = nil
	c.countsMu.Unlock()
}
