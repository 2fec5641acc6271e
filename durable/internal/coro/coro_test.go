package coro

import (
	"errors"
	"slices"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestCoroutinesRunInCreationOrderUntilBlocked(t *testing.T) {
	s := New(0)
	defer s.Close()
	var trace []string
	ready := map[string]bool{}
	for _, name := range []string{"a", "b", "c"} {
		s.Go(name, func() {
			trace = append(trace, name+"1")
			s.Block(func() bool { return ready[name] })
			trace = append(trace, name+"2")
		})
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "b1", "c1"}; !slices.Equal(trace, want) {
		t.Fatalf("trace %v, want %v", trace, want)
	}
	ready["c"], ready["a"] = true, true
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a1", "b1", "c1", "a2", "c2"}; !slices.Equal(trace, want) {
		t.Fatalf("trace %v, want %v", trace, want)
	}
	if !s.Finished("a") || s.Finished("b") {
		t.Fatalf("finished: a %v b %v", s.Finished("a"), s.Finished("b"))
	}
}

func TestCoroutineStartedByCoroutineRunsInSamePass(t *testing.T) {
	s := New(0)
	defer s.Close()
	var trace []string
	s.Go("main", func() {
		s.Go("child", func() { trace = append(trace, "child") })
		trace = append(trace, "main")
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	if want := []string{"main", "child"}; !slices.Equal(trace, want) {
		t.Fatalf("trace %v, want %v", trace, want)
	}
}

func TestCloseUnwindsParkedCoroutinesRunningDefers(t *testing.T) {
	s := New(0)
	deferred := 0
	for _, name := range []string{"x", "y"} {
		s.Go(name, func() {
			defer func() { deferred++ }()
			s.Block(func() bool { return false })
			t.Error("a parked coroutine resumed after Close")
		})
	}
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	s.Close()
	if deferred != 2 {
		t.Fatalf("%d deferred calls ran, want 2", deferred)
	}
	s.Close() // idempotent
}

func TestDeferThatBlocksDuringUnwindIsUnwoundToo(t *testing.T) {
	s := New(0)
	s.Go("main", func() {
		defer s.Block(func() bool { return false })
		s.Block(func() bool { return false })
	})
	if err := s.Run(); err != nil {
		t.Fatal(err)
	}
	s.Close() // goleak in TestMain fails the package if the goroutine stays
}

func TestPanicIsReportedWithItsValue(t *testing.T) {
	s := New(0)
	defer s.Close()
	s.Go("main", func() { panic("boom") })
	err := s.Run()
	var p *PanicError
	if !errors.As(err, &p) || p.Value != "boom" || p.Stack == "" {
		t.Fatalf("Run = %v, want the panic with its stack", err)
	}
}

func TestCoroutineThatNeverYieldsIsReportedStuck(t *testing.T) {
	s := New(20 * time.Millisecond)
	release := make(chan struct{})
	s.Go("spin", func() { <-release })
	if err := s.Run(); !errors.Is(err, ErrStuck) {
		t.Fatalf("Run = %v, want ErrStuck", err)
	}
	if err := s.Run(); !errors.Is(err, ErrStuck) {
		t.Fatalf("second Run = %v, want ErrStuck", err)
	}
	close(release) // let the stuck goroutine end so goleak passes
	s.Close()
	goleak.VerifyNone(t, goleak.IgnoreCurrent())
}
