package localstack

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// sharedStartTimeout bounds the first [ForTest] call: a fresh install
// downloads DynamoDB Local (about 60 MB) with npm.
const sharedStartTimeout = 10 * time.Minute

// shared is the emulator of this test binary, started by the first ForTest.
var shared struct {
	once sync.Once
	mu   sync.Mutex // guards em
	em   *Emulator
	err  error
}

// Main runs the tests of m and then stops the emulator [ForTest] started, if
// any. It returns the exit code for os.Exit:
//
//	func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }
//
// If stopping fails, Main reports it on stderr and returns a non-zero code.
func Main(m *testing.M) int {
	code := m.Run()
	shared.mu.Lock()
	em := shared.em
	shared.mu.Unlock()
	if em != nil {
		// Main is the top of the test binary: there is no caller context.
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := em.Stop(ctx); err != nil {
			fmt.Fprintf(os.Stderr, "localstack: stop the shared emulator: %v\n", err)
			if code == 0 {
				code = 1
			}
		}
	}
	sharedHTTPClient().GetTransport().CloseIdleConnections()
	return code
}

// ForTest returns the endpoints of the emulator shared by every test of this
// test binary, calling [Start] with default options on first use. It calls
// t.Fatal with the reason when the emulator cannot be had (each later call
// fails the same way, without retrying).
//
// Use [Main] in TestMain so that emulators started here are stopped when
// the tests end. Without it, embedded servers still die with the test binary
// on Linux (parent-death signal), and a LocalStack container is reaped by
// testcontainers-go, but later.
func ForTest(t testing.TB) Endpoints {
	t.Helper()
	if os.Getenv(NoEmulatorEnv) != "" {
		t.Skipf("localstack: %s is set (make check runs only the tests that need no emulator; make test runs them all)", NoEmulatorEnv)
	}
	shared.once.Do(func() {
		// The shared emulator outlives the test that happens to start it:
		// only its start-up is bound to that test.
		ctx, cancel := context.WithTimeout(t.Context(), sharedStartTimeout)
		defer cancel()
		em, err := Start(ctx, func(o *Options) { o.Logger = slog.Default() })
		shared.mu.Lock()
		shared.em, shared.err = em, err
		shared.mu.Unlock()
	})
	shared.mu.Lock()
	em, err := shared.em, shared.err
	shared.mu.Unlock()
	if err != nil {
		t.Fatalf("localstack: no emulator for this test binary: %v", err)
	}
	if err := em.checkAlive(); err != nil {
		t.Fatalf("localstack: the emulator of this test binary died: %v", err)
	}
	return em.Endpoints
}

// NoEmulatorEnv names the environment variable that, when set, makes
// [ForTest] skip its test instead of starting an emulator: the fast loop
// (make check) runs only the tests that need none.
const NoEmulatorEnv = "DURADYN_NO_EMULATOR"

// maxNameLen keeps names from UniqueName within the 80 characters SQS allows
// even after a ".fifo" suffix.
const maxNameLen = 75

// UniqueName returns a name for a DynamoDB table or an SQS queue that no
// other test, in this or any other test binary, will use: prefix, the test's
// name and 12 random hex digits, joined by "-". Characters outside
// [A-Za-z0-9_-] become "_"; the test's name is shortened so that the result
// is at most 75 characters (room for ".fifo").
func UniqueName(t testing.TB, prefix string) string {
	t.Helper()
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("localstack: random name: %v", err)
	}
	suffix := hex.EncodeToString(b[:])
	prefix = sanitizeName(prefix)
	if prefix == "" {
		prefix = "t"
	}
	if limit := maxNameLen - len(suffix) - 2; len(prefix) > limit {
		prefix = prefix[:limit]
	}
	testName := sanitizeName(t.Name())
	room := maxNameLen - len(prefix) - len(suffix) - 2 // two "-" separators
	if len(testName) > room {
		testName = testName[:room]
	}
	if testName == "" {
		return prefix + "-" + suffix
	}
	return prefix + "-" + testName + "-" + suffix
}

func sanitizeName(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			return r
		}
		return '_'
	}, s)
}

// NewQueue creates the SQS queue name at e and returns its URL. A name
// ending in ".fifo" makes a FIFO queue; any other a standard queue. The
// queue is deleted in t.Cleanup. It calls t.Fatal if the queue cannot be
// created.
func NewQueue(t testing.TB, e Endpoints, name string) string {
	t.Helper()
	ctx := t.Context()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatalf("localstack: create queue %s: %v", name, err)
	}
	client := e.SQS(cfg)
	in := &sqs.CreateQueueInput{QueueName: aws.String(name)}
	if strings.HasSuffix(name, ".fifo") {
		in.Attributes = map[string]string{string(sqstypes.QueueAttributeNameFifoQueue): "true"}
	}
	out, err := client.CreateQueue(ctx, in)
	if err != nil {
		t.Fatalf("localstack: create queue %s: %v", name, err)
	}
	queueURL := aws.ToString(out.QueueUrl)
	t.Cleanup(func() {
		// t.Context is cancelled before cleanups run. An emulator on a
		// machine that other work loads can take well over 30 s to answer
		// (seen after TestCrashRecovery, whose killed processes leave long
		// polls open).
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		_, err := client.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(queueURL)})
		var missing *sqstypes.QueueDoesNotExist
		if err != nil && !errors.As(err, &missing) {
			t.Errorf("localstack: delete queue %s: %v", name, err)
		}
	})
	return queueURL
}
