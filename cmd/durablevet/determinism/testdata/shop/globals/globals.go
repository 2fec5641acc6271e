// Package globals writes package-level variables in an orchestration.
package globals

import (
	"example.com/shop/clock"
	"github.com/duradyn/duradyn/durable"
)

type record struct{ N int }

var (
	runs  int
	names []string
	seen  = map[string]bool{}
	cfg   struct{ Limit int }
	last  = &record{}
	table [4]int
)

// Writes writes package state in every form of assignment.
func Writes(ctx *durable.OrchestrationContext, in string) int {
	runs++                    // want `^write to package-level variable runs in orchestration: package-level state is not replayed and every instance shares it; keep state in local variables or pass it in as input$`
	runs += 2                 // want `^write to package-level variable runs in orchestration`
	names = append(names, in) // want `^write to package-level variable names in orchestration`
	seen[in] = true           // want `^write to package-level variable seen in orchestration`
	delete(seen, in)          // want `^delete on package-level variable seen in orchestration`
	clear(names[:1])          // want `^clear on package-level variable names in orchestration`
	cfg.Limit = 3             // want `^write to package-level variable cfg in orchestration`
	last.N = 1                // want `^write to package-level variable last in orchestration`
	*last = record{}          // want `^write to package-level variable last in orchestration`
	table[0] = 1              // want `^write to package-level variable table in orchestration`
	clock.Ticks = 1           // want `^write to package-level variable clock\.Ticks in orchestration`
	for runs = range 3 {      // want `^write to package-level variable runs in orchestration`
	}

	// Reads, locals and shadowing names are fine.
	total := runs + len(names) + cfg.Limit
	var local record
	local.N = total
	{
		runs := 0
		runs++
		total += runs
	}
	return total + local.N
}
