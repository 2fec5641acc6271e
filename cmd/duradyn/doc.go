// Command duradyn starts, signals, inspects and manages durable
// orchestrations stored in a DynamoDB table by the dynamo provider. It talks
// to the table (and, when given, the wake-up queues) only, so it works from
// any machine with access to them, with or without a running runtime.
//
// Usage:
//
//	duradyn [global flags] <command> [arguments] [flags]
//
// Flags may come before or after the command and its arguments; "--" ends
// the flags.
//
// Commands:
//
//	start <orchestration> <instance> [--input JSON|@file] [--raw] [--version v] [--wait]
//	status <instance>
//	wait <instance>
//	raise <instance> <event> [--data JSON|@file] [--raw]
//	enqueue <instance> <queue> [--data JSON|@file] [--raw]
//	cancel <instance> [--reason text]
//	list [--status Running|Completed|Failed|ContinuedAsNew] [--limit N]
//	info <instance>
//	tree <instance>
//	history <instance> [--execution N | --all] [--json]
//	kv <instance> [key]
//	metrics
//	delete <instance> [--force]
//	delete --completed-before D [--limit N] [--dry-run]
//	prune <instance> [--keep-last N] [--completed-before D]
//	prune --all [--keep-last N] [--completed-before D] [--limit N]
//	table create|ensure
//	jobs list [--status S]... [--due-before D] [--meta key=value]... [--limit N] [--offset N]
//	jobs add <job-id> --trigger cron|interval|date --args JSON|@file --name N
//	         [--if-missed skip|run_once|run_all] [--misfire-threshold SECONDS]
//	         [--meta key=value]... [--paused]
//	jobs add [job-id] --json JSON|@file
//	jobs pause|resume|delete <job-id>
//	locks list
//	locks reset <key>
//	clock [--max-skew duration]
//	dev [--persist DIR] [--detach]
//	dev --print-env
//	dev stop
//	help [command]
//
// D is a duration back from now ("720h") or an RFC 3339 time; for
// --due-before it is a duration from now ("1h": due within the hour) or an
// RFC 3339 time in UTC (with a Z suffix).
//
// The jobs commands work on the scheduled jobs of package jobs, the locks
// commands on the distributed locks of package locks, both stored in the
// same table, each spread over 16 index partitions of its own (a fixed
// count, whatever --shards says of the provider's). jobs add checks the
// trigger and computes the first run time as a scheduler's Add does; the
// job's name is the action the schedulers run for it, and --json gives the
// whole job in its JSON form instead of the other flags. With
// --orchestrator-queue-url, jobs add and resume wake the running
// schedulers, and locks reset the waiters of the lock; without it they
// find out later (a warning says so). locks reset frees a lock whoever
// holds it, for recovery after a crash, and says whether a live holder was
// removed.
//
// clock measures this host's clock against DynamoDB's from the Date headers
// of 32 cheap reads (two listings of the locks' index partitions) and
// prints the skew and its uncertainty; it exits with code 6 when the whole
// interval lies further than --max-skew (default 1 s) from zero, the skew
// the leases and timers of processes sharing a table assume at most.
//
// dev runs a development environment: it starts DynamoDB Local and an SQS
// emulator (package localstack's embedded emulators, its own whatever the
// endpoint variables say), creates the table (default duradyn-dev) and its
// two wake-up queues, prints one "export NAME=value" line per setting the
// command and dynamo.NewFromEnv read, and runs until interrupted or until
// "dev stop", then stops them. --detach starts it in the background and
// returns once it is ready; --print-env prints the settings of the running
// one (eval "$(duradyn dev --print-env)" in another shell); --persist DIR
// keeps DynamoDB Local's data across restarts. Its lock, socket and log are
// in DURADYN_DEV_DIR, default duradyn/dev under the user's cache directory.
//
// Global flags, with the environment variables that set their defaults:
//
//	--table       DURADYN_TABLE                    the table (required)
//	--region      AWS_REGION, AWS_DEFAULT_REGION    the AWS region
//	--orchestrator-queue-url  DURADYN_ORCHESTRATOR_QUEUE_URL
//	--worker-queue-url        DURADYN_WORKER_QUEUE_URL
//	                      the wake-up queues of the runtimes; without them
//	                      work enqueued by the CLI is found by running
//	                      dispatchers at their next sweep (a warning says so)
//	--shards      DURADYN_SHARDS                   the table's shard count;
//	                      default: the count stored in the table (16 for a
//	                      new table). A count that differs from the stored
//	                      one is refused.
//	--dynamodb-endpoint  DURADYN_DYNAMODB_ENDPOINT, AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL
//	--sqs-endpoint       DURADYN_SQS_ENDPOINT, AWS_ENDPOINT_URL_SQS, AWS_ENDPOINT_URL
//	--output      DURADYN_OUTPUT                   text (default) or json
//	--timeout     limit for the whole command (0: none); for wait and
//	              start --wait, reaching it exits with code 4
//
// Credentials and everything else come from the AWS SDK's default chain:
// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, AWS_PROFILE and the shared
// files, SSO, container and instance roles.
//
// Progress of long work (list, bulk delete, bulk prune) goes to standard
// error, every DURADYN_PROGRESS_EVERY instances (default 100); so does the
// live line of wait, rewritten in place on a terminal and one line per
// change otherwise. Results go to standard output: text, or with
// --output json one JSON document (history --json: duroxide JSON lines,
// one event per line, the input of durabletest.ReplayHistory).
//
// Exit codes:
//
//	0  success
//	1  error (AWS, table, layout, credentials, ...)
//	2  usage: unknown command or flag, missing or malformed argument
//	3  not found: unknown instance, execution, key or job
//	4  wait timeout: --timeout ran out before the instance finished
//	5  the orchestration failed (wait, start --wait)
//	6  clock: this host's clock is known to be further than --max-skew
//	   (default 1 s) from DynamoDB's
//
// Errors are printed as one line on standard error, and a command that
// fails on bad input changes nothing.
package main
