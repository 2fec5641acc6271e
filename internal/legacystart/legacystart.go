// Package legacystart rewrites turns as a tool that predates
// StartOrchestrationItem.ParentExecutionID would write them, so that tests
// can exercise the lookup a child without the field falls back to.
package legacystart

import "github.com/duradyn/duradyn/provider"

// Strip returns commit with ParentExecutionID cleared on every start it
// sends; commit itself is left as it is.
func Strip(commit provider.TurnCommit) provider.TurnCommit {
	items := make([]provider.WorkItem, len(commit.OrchestratorItems))
	for i, w := range commit.OrchestratorItems {
		if s, ok := w.(provider.StartOrchestrationItem); ok {
			s.ParentExecutionID = 0
			w = s
		}
		items[i] = w
	}
	commit.OrchestratorItems = items
	return commit
}
