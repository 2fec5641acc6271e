package orch

import (
	. "time"

	"github.com/duradyn/duradyn/durable"
)

// Dot uses package time through a dot import.
func Dot(ctx *durable.OrchestrationContext) Duration {
	return Since(Now()) // want `time\.Since in orchestration` `time\.Now in orchestration`
}
