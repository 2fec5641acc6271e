package localstack

import (
	"context"
	"errors"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/duradyn/duradyn/internal/testlog"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// createTable creates a pk/sk table named name and deletes it in t.Cleanup.
func createTable(t *testing.T, db *dynamodb.Client, name string) {
	t.Helper()
	ctx := t.Context()
	_, err := db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   aws.String(name),
		BillingMode: ddbtypes.BillingModePayPerRequest,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: ddbtypes.ScalarAttributeTypeS},
		},
		KeySchema: []ddbtypes.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: ddbtypes.KeyTypeRange},
		},
	})
	if err != nil {
		t.Fatalf("CreateTable %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
		defer cancel()
		if _, err := db.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(name)}); err != nil {
			t.Errorf("DeleteTable %s: %v", name, err)
		}
	})
	waiter := dynamodb.NewTableExistsWaiter(db)
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(name)}, time.Minute); err != nil {
		t.Fatalf("table %s never became active: %v", name, err)
	}
}

func TestDynamoDB_PutGetConditional(t *testing.T) {
	t.Parallel()
	e := ForTest(t)
	ctx := t.Context()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	db := e.DynamoDB(cfg)
	table := UniqueName(t, "tbl")
	createTable(t, db, table)

	item := map[string]ddbtypes.AttributeValue{
		"pk":   &ddbtypes.AttributeValueMemberS{Value: "instance#1"},
		"sk":   &ddbtypes.AttributeValueMemberS{Value: "meta"},
		"data": &ddbtypes.AttributeValueMemberS{Value: "hello"},
	}
	notExists := &dynamodb.PutItemInput{
		TableName:                aws.String(table),
		Item:                     item,
		ConditionExpression:      aws.String("attribute_not_exists(#pk)"),
		ExpressionAttributeNames: map[string]string{"#pk": "pk"},
	}
	if _, err := db.PutItem(ctx, notExists); err != nil {
		t.Fatalf("first conditional PutItem: %v", err)
	}

	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(table),
		Key:            map[string]ddbtypes.AttributeValue{"pk": item["pk"], "sk": item["sk"]},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatalf("GetItem: %v", err)
	}
	data, ok := got.Item["data"].(*ddbtypes.AttributeValueMemberS)
	if !ok || data.Value != "hello" {
		t.Fatalf("GetItem returned %#v, want data=hello", got.Item)
	}

	_, err = db.PutItem(ctx, notExists)
	var ccf *ddbtypes.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("second conditional PutItem: got %v, want ConditionalCheckFailedException", err)
	}
}

func TestSQS_SendReceiveLongPoll(t *testing.T) {
	t.Parallel()
	e := ForTest(t)
	ctx := t.Context()
	cfg, err := e.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	queueURL := NewQueue(t, e, UniqueName(t, "q"))
	sendReceive(t, e.SQS(cfg), queueURL)
}

// sendReceive sends a message to queueURL and long-polls until it arrives.
func sendReceive(t *testing.T, client *sqs.Client, queueURL string) {
	t.Helper()
	ctx := t.Context()
	body := "wake " + UniqueName(t, "m")
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(queueURL), MessageBody: aws.String(body)}); err != nil {
		t.Fatalf("SendMessage: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:            aws.String(queueURL),
			WaitTimeSeconds:     1,
			MaxNumberOfMessages: 1,
		})
		if err != nil {
			t.Fatalf("ReceiveMessage: %v", err)
		}
		if len(out.Messages) == 0 {
			continue
		}
		if got := aws.ToString(out.Messages[0].Body); got != body {
			t.Fatalf("received %q, want %q", got, body)
		}
		if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(queueURL), ReceiptHandle: out.Messages[0].ReceiptHandle}); err != nil {
			t.Fatalf("DeleteMessage: %v", err)
		}
		return
	}
	t.Fatalf("message not received from %s within 10s", queueURL)
}

var validName = regexp.MustCompile(`^[A-Za-z0-9_-]{3,80}$`)

func TestUniqueName(t *testing.T) {
	t.Parallel()
	seen := make(map[string]bool)
	for range 1000 {
		n := UniqueName(t, "tasks")
		if !validName.MatchString(n) {
			t.Fatalf("UniqueName = %q: not a valid table/queue name", n)
		}
		if seen[n] {
			t.Fatalf("UniqueName returned %q twice", n)
		}
		seen[n] = true
	}

	for _, tc := range []struct{ name, prefix string }{
		{"empty prefix", ""},
		{"odd characters", "a b/c.d#é"},
		{"long prefix", strings.Repeat("p", 200)},
		{strings.Repeat("very long subtest name ", 10), "x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := UniqueName(t, tc.prefix)
			if !validName.MatchString(n) || len(n+".fifo") > 80 {
				t.Fatalf("UniqueName(%q) = %q (%d chars): not a valid name with room for .fifo", tc.prefix, n, len(n))
			}
		})
	}
}

func TestStart_FromEnvironment(t *testing.T) {
	e := ForTest(t)
	for _, k := range []string{"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS"} {
		t.Setenv(k, "")
	}
	t.Setenv(EnvDynamoDBEndpoint, e.DynamoDBURL)
	t.Setenv(EnvSQSEndpoint, e.SQSURL)

	ctx := t.Context()
	em, err := Start(ctx, func(o *Options) { o.Logger = testlog.New(t) })
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if em.Source != SourceEnv {
		t.Errorf("Source = %q, want %q", em.Source, SourceEnv)
	}
	if em.DynamoDBURL != e.DynamoDBURL || em.SQSURL != e.SQSURL {
		t.Errorf("endpoints = %s, %s; want %s, %s", em.DynamoDBURL, em.SQSURL, e.DynamoDBURL, e.SQSURL)
	}
	if len(em.procs) != 0 || em.container != nil || em.LogDir() != "" {
		t.Errorf("Start from the environment started something: %d processes, container %v, logs %q", len(em.procs), em.container, em.LogDir())
	}
	if err := em.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	// Stopping an environment emulator leaves the servers alone.
	cfg, _ := e.AWSConfig(ctx)
	if _, err := e.DynamoDB(cfg).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("shared emulator unusable after Stop of the env emulator: %v", err)
	}

	t.Run("AWS_ENDPOINT_URL serves both", func(t *testing.T) {
		t.Setenv(EnvDynamoDBEndpoint, "")
		t.Setenv(EnvSQSEndpoint, "")
		t.Setenv("AWS_ENDPOINT_URL", e.DynamoDBURL)
		t.Setenv("AWS_ENDPOINT_URL_SQS", e.SQSURL)
		ep, ok, err := endpointsFromEnv(DefaultRegion)
		if err != nil || !ok {
			t.Fatalf("endpointsFromEnv: %v, %v", ok, err)
		}
		if ep.DynamoDBURL != e.DynamoDBURL || ep.SQSURL != e.SQSURL {
			t.Fatalf("endpointsFromEnv = %+v", ep)
		}
	})

	t.Run("half configured", func(t *testing.T) {
		t.Setenv(EnvSQSEndpoint, "")
		if _, err := Start(ctx); err == nil || !strings.Contains(err.Error(), EnvSQSEndpoint) {
			t.Fatalf("Start with only a DynamoDB endpoint: got %v, want an error naming %s", err, EnvSQSEndpoint)
		}
	})
}

func TestStop_StopsEmbeddedProcesses(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a second embedded emulator")
	}
	ctx := t.Context()
	// fauxqs here, whichever SQS emulator the shared one uses, so that both
	// embedded SQS emulators are exercised.
	em, err := Start(ctx, func(o *Options) {
		o.IgnoreEnvironment = true
		o.DisableLocalStack = true
		o.SQSEmulator = SQSEmulatorFauxqs
		o.Logger = testlog.New(t)
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = em.Stop(context.WithoutCancel(ctx))
		}
	})
	if em.Source != SourceEmbedded {
		t.Fatalf("Source = %q, want %q", em.Source, SourceEmbedded)
	}
	if len(em.procs) != 2 {
		t.Fatalf("%d processes, want 2", len(em.procs))
	}
	cfg, err := em.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := em.DynamoDB(cfg).ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	t.Run("SQS", func(t *testing.T) { // its queue is deleted before Stop
		sendReceive(t, em.SQS(cfg), NewQueue(t, em.Endpoints, UniqueName(t, "fq")))
	})

	logDir := em.LogDir()
	if err := em.Stop(ctx); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	stopped = true
	for _, p := range em.procs {
		if !p.exited() {
			t.Errorf("%s (pid %d) still running after Stop", p.name, p.cmd.Process.Pid)
		}
	}
	for _, u := range []string{em.DynamoDBURL, em.SQSURL} {
		pu, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		if c, err := net.DialTimeout("tcp", pu.Host, time.Second); err == nil {
			c.Close()
			t.Errorf("%s still accepts connections after Stop", u)
		}
	}
	if _, err := os.Stat(logDir); !os.IsNotExist(err) {
		t.Errorf("log directory %s not removed by Stop: %v", logDir, err)
	}
	if err := em.Stop(ctx); err != nil {
		t.Errorf("second Stop: %v", err)
	}
}

func TestStart_LocalStack(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	o, err := Options{}.resolve()
	if err != nil {
		t.Fatal(err)
	}
	if err := probeDocker(ctx, o); err != nil {
		t.Skipf("LocalStack path not exercised: %v", err)
	}
	em, err := Start(ctx, func(o *Options) {
		o.IgnoreEnvironment = true
		o.Logger = testlog.New(t)
	})
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() {
		if err := em.Stop(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	if em.Source != SourceLocalStack {
		t.Fatalf("Source = %q, want %q (Docker is healthy)", em.Source, SourceLocalStack)
	}
	cfg, err := em.AWSConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	createTable(t, em.DynamoDB(cfg), UniqueName(t, "ls"))
	sendReceive(t, em.SQS(cfg), NewQueue(t, em.Endpoints, UniqueName(t, "lsq")))
}

func TestOptions_Resolve(t *testing.T) {
	t.Setenv(EnvSQSEmulator, "")
	t.Setenv(EnvLocalStackImage, "")
	o, err := Options{}.resolve()
	if err != nil {
		t.Fatalf("defaults: %v", err)
	}
	if o.Region != DefaultRegion || o.LocalStackImage != defaultLocalStackImage ||
		o.ReadyTimeout <= 0 || o.StopGracePeriod <= 0 || o.DockerProbeTimeout <= 0 || o.Logger == nil {
		t.Errorf("defaults not applied: %+v", o)
	}
	if _, err := (Options{SQSEmulator: "sqslite"}).resolve(); err == nil {
		t.Error("unknown SQS emulator accepted")
	}
	if _, err := (Options{StopGracePeriod: -time.Second}).resolve(); err == nil {
		t.Error("negative StopGracePeriod accepted")
	}

	t.Setenv(EnvCacheDir, "")
	dir, err := Options{}.cacheDir()
	if err != nil {
		t.Fatal(err)
	}
	if root, ok := moduleRoot(); !ok || dir != filepath.Join(root, ".cache", "emulators") {
		t.Errorf("default cache dir = %s, want .cache/emulators under the module root", dir)
	}
	t.Setenv(EnvCacheDir, t.TempDir())
	if dir, _ := (Options{}).cacheDir(); dir != os.Getenv(EnvCacheDir) {
		t.Errorf("cache dir = %s, want %s from %s", dir, os.Getenv(EnvCacheDir), EnvCacheDir)
	}
}

// TestInstallNPM_Concurrent installs into a fresh cache from several
// goroutines at once: each holds its own lock file descriptor, as separate
// test binaries do.
func TestInstallNPM_Concurrent(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs npm")
	}
	cache := t.TempDir()
	check := func(d string) error { _, err := dynamoDBLocalJar(d); return err }
	const n = 3
	dirs := make([]string, n)
	errs := make([]error, n)
	logger := testlog.New(t)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			dirs[i], errs[i] = installNPM(t.Context(), cache, dynamoDBLocalPackage, check, logger)
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("install %d: %v", i, errs[i])
		}
		if dirs[i] != dirs[0] {
			t.Fatalf("installs returned %s and %s", dirs[0], dirs[i])
		}
	}
	if _, err := dynamoDBLocalJar(dirs[0]); err != nil {
		t.Fatal(err)
	}
	leftovers, _ := filepath.Glob(filepath.Join(cache, ".tmp-install-*"))
	if len(leftovers) != 0 {
		t.Errorf("temporary directories left: %v", leftovers)
	}
}
