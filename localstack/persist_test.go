package localstack

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/internal/testlog"
)

// TestDynamoDBDataDir_KeepsTablesAcrossRestarts: with DynamoDBDataDir, a
// table created on one embedded DynamoDB Local is there on the next one
// started on the same directory; Wait notices a server that exited.
func TestDynamoDBDataDir_KeepsTablesAcrossRestarts(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts two embedded emulators")
	}
	dir := filepath.Join(t.TempDir(), "data") // created by Start
	start := func() *Emulator {
		em, err := Start(t.Context(), func(o *Options) {
			o.IgnoreEnvironment = true
			o.DynamoDBDataDir = dir
			o.Logger = testlog.New(t)
		})
		if err != nil {
			t.Fatalf("Start: %v", err)
		}
		t.Cleanup(func() { _ = em.Stop(context.WithoutCancel(t.Context())) })
		if em.Source != SourceEmbedded {
			t.Fatalf("Source = %q, want %q: DynamoDBDataDir skips LocalStack", em.Source, SourceEmbedded)
		}
		return em
	}
	tables := func(em *Emulator) []string {
		cfg, err := em.AWSConfig(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		out, err := em.DynamoDB(cfg).ListTables(t.Context(), &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatalf("ListTables: %v", err)
		}
		return out.TableNames
	}

	first := start()
	cfg, err := first.AWSConfig(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// Not createTable: its clean-up would delete the table through this
	// emulator, which is stopped first; the directory goes with the test.
	name := UniqueName(t, "kept")
	db := first.DynamoDB(cfg)
	if _, err := db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
	}); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	stopCtx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	if err := first.Stop(stopCtx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// Every server has exited: Wait says which, at once.
	if err := first.Wait(t.Context()); err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("Wait after Stop = %v, want an error naming the server that exited", err)
	}

	second := start()
	if got := tables(second); !slices.Contains(got, name) {
		t.Errorf("tables after a restart on %s: %v, want %s among them", dir, got, name)
	}

	// A running emulator: Wait returns when its context ends.
	ctx, cancelWait := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancelWait()
	if err := second.Wait(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Wait on running servers = %v, want the context's deadline", err)
	}
}

// TestDynamoDBDataDir_RefusesEndpointsFromTheEnvironment: a data directory
// needs the embedded DynamoDB Local, so endpoints named in the environment
// are an error, not silently used instead.
func TestDynamoDBDataDir_RefusesEndpointsFromTheEnvironment(t *testing.T) {
	t.Setenv(EnvDynamoDBEndpoint, "http://127.0.0.1:1")
	t.Setenv(EnvSQSEndpoint, "http://127.0.0.1:1")
	_, err := Options{DynamoDBDataDir: t.TempDir()}.resolve()
	if err == nil || !strings.Contains(err.Error(), "IgnoreEnvironment") {
		t.Errorf("resolve = %v, want an error naming IgnoreEnvironment", err)
	}
	o, err := Options{DynamoDBDataDir: t.TempDir(), IgnoreEnvironment: true}.resolve()
	if err != nil || !o.DisableLocalStack || !filepath.IsAbs(o.DynamoDBDataDir) {
		t.Errorf("resolve with IgnoreEnvironment = %+v, %v; want an absolute directory and LocalStack disabled", o, err)
	}
	if got := dynamoDBStorageArgs(o); !slices.Equal(got, []string{"-dbPath", o.DynamoDBDataDir}) {
		t.Errorf("storage flags %v, want -dbPath %s", got, o.DynamoDBDataDir)
	}
	if got := dynamoDBStorageArgs(Options{}); !slices.Equal(got, []string{"-inMemory"}) {
		t.Errorf("default storage flags %v, want -inMemory", got)
	}
}
