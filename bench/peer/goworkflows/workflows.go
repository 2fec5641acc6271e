package goworkflows

import (
	"context"
	"fmt"
	"sync/atomic"

	"github.com/cschleiden/go-workflows/registry"
	"github.com/cschleiden/go-workflows/workflow"
)

// Cities are the cities HelloCities5 greets, in order.
var Cities = []string{"Tokyo", "Seattle", "London", "Paris", "Lima"}

// Greeting is what the Hello activity returns for city.
func Greeting(city string) string { return "Hello, " + city + "!" }

// Workflow names as registered with the worker.
const (
	helloCities5Name = "HelloCities5"
	fanOutName       = "FanOut"
)

// greeter holds the Hello activity; it counts the executions, so that a
// retried activity shows in the result's notes.
type greeter struct {
	executed atomic.Int64
}

// Hello is the activity both scenarios run; go-workflows registers it
// under its method name, "Hello".
func (g *greeter) Hello(_ context.Context, city string) (string, error) {
	g.executed.Add(1)
	return Greeting(city), nil
}

// hello is the activity as workflows reference it: go-workflows only
// takes its name and signature from the method value.
var hello = (*greeter)(nil).Hello

// helloCities5 greets the cities one after the other.
func helloCities5(ctx workflow.Context) ([]string, error) {
	greetings := make([]string, 0, len(Cities))
	for _, city := range Cities {
		g, err := workflow.ExecuteActivity[string](ctx, workflow.DefaultActivityOptions, hello, city).Get(ctx)
		if err != nil {
			return nil, fmt.Errorf("greet %s: %w", city, err)
		}
		greetings = append(greetings, g)
	}
	return greetings, nil
}

// fanOutCity is the city activity i of FanOut greets.
func fanOutCity(i int) string { return Cities[i%len(Cities)] }

// fanOut schedules n greetings at once, then waits for all of them.
func fanOut(ctx workflow.Context, n int) ([]string, error) {
	futures := make([]workflow.Future[string], n)
	for i := range futures {
		futures[i] = workflow.ExecuteActivity[string](ctx, workflow.DefaultActivityOptions, hello, fanOutCity(i))
	}
	greetings := make([]string, n)
	for i, f := range futures {
		g, err := f.Get(ctx)
		if err != nil {
			return nil, fmt.Errorf("greeting %d: %w", i, err)
		}
		greetings[i] = g
	}
	return greetings, nil
}

// register registers the scenario's workflows and g's activity.
func register(r interface {
	RegisterWorkflow(wf workflow.Workflow, opts ...registry.RegisterOption) error
	RegisterActivity(a workflow.Activity, opts ...registry.RegisterOption) error
}, g *greeter) error {
	if err := r.RegisterWorkflow(helloCities5, registry.WithName(helloCities5Name)); err != nil {
		return fmt.Errorf("register %s: %w", helloCities5Name, err)
	}
	if err := r.RegisterWorkflow(fanOut, registry.WithName(fanOutName)); err != nil {
		return fmt.Errorf("register %s: %w", fanOutName, err)
	}
	if err := r.RegisterActivity(g.Hello); err != nil {
		return fmt.Errorf("register Hello: %w", err)
	}
	return nil
}
