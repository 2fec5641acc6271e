// Package tablekeys holds the key rules that every package writing the
// duradyn table shares: the shard of a routing key ([Shard]), the
// fixed-width numbers keys sort by ([Num20], [ParseNum20]), the digest that
// stands in for a value too long for a key ([Digest]), and the prefixes
// that keep the packages' partitions apart.
//
// Each package still builds and parses its own keys (package
// dynamo/internal/keys for the workflow provider, package jobs, package
// locks); it takes these rules from here, so that one rule cannot drift
// between the packages and existing tables keep reading the same.
//
// # Partition-key prefixes
//
// Every partition key, of the table and of its two indexes, starts with one
// of the prefixes below; what follows is a free-form value (an id or a key)
// or a shard number. No prefix of an attribute is a prefix of another of the
// same attribute, so a key one package builds never parses as another's.
// The package's tests check this.
//
// Table partition key (attribute pk):
//
//   - "I#" + instance id ([InstancePrefix]): an instance's partition, with
//     its control rows and history. Workflow provider.
//   - "W#" + instance id ([WorkerPrefix]): an instance's worker-queue rows.
//     Workflow provider.
//   - "S#" + session id ([SessionPrefix]): a session record. Workflow
//     provider.
//   - "#LAYOUT" ([LayoutPK]), the whole key: the table's layout record.
//     Workflow provider.
//   - "#METRICS" ([MetricsPK]), the whole key: the counter cells of
//     instances that have ended. Workflow provider.
//   - "J#" + job id ([JobPrefix]): a job. Package jobs.
//   - "K#" + lock key ([LockPrefix]): a lock. Package locks.
//
// Ready index partition key (attribute rq_pk):
//
//   - "O#" + shard ([ReadyOrchestratorPrefix]): orchestrator messages.
//     Workflow provider.
//   - "W#" + shard ([ReadyWorkerPrefix]): worker rows. Workflow provider.
//
// Instances index partition key (attribute li_pk):
//
//   - "L#" + shard ([ListInstancesPrefix]): instance metadata rows.
//     Workflow provider.
//   - "S#" + shard ([ListSessionsPrefix]): session records, by owner.
//     Workflow provider.
//   - "J#" + shard ([JobIndexPrefix]): jobs, by next run time. Package jobs.
//   - "K#" + shard ([LockIndexPrefix]): held locks, by lease end. Package
//     locks.
//
// A prefix may appear in two attributes ("W#", "S#", "J#" and "K#" each
// do): the attributes are compared separately, so that is no collision.
package tablekeys
