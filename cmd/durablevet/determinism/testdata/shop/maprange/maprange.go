// Package maprange sums the values of a map: a range whose order does not
// matter, which the analyzer reports all the same.
package maprange

import "github.com/duradyn/duradyn/durable"

// Total sums prices twice: once reported, once under the directive.
func Total(ctx *durable.OrchestrationContext, prices map[string]int) int {
	sum := 0
	for _, p := range prices { // want `^range over map in orchestration: iteration order is random; range over sorted keys$`
		sum += p
	}
	//durablevet:ignore the sum does not depend on the order
	for _, p := range prices {
		sum += p
	}
	return sum
}
