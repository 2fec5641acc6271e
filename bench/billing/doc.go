// Package billing meters DynamoDB and SQS requests and prices them by the
// services' billing rules: DynamoDB on-demand request units and SQS billed
// requests, at the us-east-1 list prices of its constants
// ([DynamoDBWriteRequestUnitPrice], [SQSRequestPrice] and the others).
// [LambdaCost] prices a Lambda function's invocations by Lambda's rules
// (durations rounded up to the millisecond, GB-seconds at a memory size,
// a charge per request) at the arm64 list prices of [LambdaARMGBSecondPrice]
// and [LambdaRequestPrice].
//
// A [Meter] is installed on SDK clients as a middleware
// ([Meter.DynamoDB], [Meter.SQS]) and counts every operation they call.
// [Meter.Usage] takes a snapshot; [Usage.Sub] of two snapshots measures an
// interval, and [Usage.Dollars] prices it.
//
//	meter, err := billing.NewMeter(ctx, shadow, table) // shadow: an unmetered client
//	db := dynamodb.NewFromConfig(cfg, meter.DynamoDB)
//	q := sqs.NewFromConfig(cfg, meter.SQS)
//	before := meter.Usage()
//	// ... run the workload with db and q ...
//	used := meter.Usage().Sub(before)
//	fmt.Println(used.WRU, used.RRU, used.SQSBilled, used.Dollars())
//
// # Why the units are computed
//
// DynamoDB Local reports consumed capacity, but not as DynamoDB bills it:
// it under-counts transactions (ten transactional puts of 1- and 3-unit
// items report 8 units where DynamoDB bills 40), reports nothing for failed
// conditional writes, absent items in BatchGetItem, or an empty Query page,
// and charges 2 units for a batched delete of an absent item. The meter
// applies the documented rules instead; each rule's doc comment names the
// AWS page it comes from, and the tests check the meter against DynamoDB
// Local wherever Local follows the rules, and show where it does not.
//
// # The rules
//
// Sizes: itemsize.ItemSize, by "DynamoDB item sizes and formats". Writes: 1 write
// unit per KB (1,024 bytes), rounded up, of the larger of the item before and
// after (PutItem, UpdateItem, each BatchWriteItem request), of the deleted
// item (DeleteItem), at least 1; a write whose condition fails still costs
// the larger of the existing and new item, or 1 unit when there is no item.
// Transactions: twice the units of each action's standard write, the
// ConditionCheck included. Secondary indexes: per index, one write of the
// entry (keys plus projected attributes) when an item enters, leaves or
// changes projected attributes in it, two when its index key changes, none
// otherwise; index writes are standard writes, also under a transaction.
// Reads: 1 read unit per 4 KB, rounded up, half that eventually consistent;
// Query and Scan by the evaluated items of each page together; an absent
// item or an empty page still costs one read; transactional reads twice.
// SQS: one billed request per API action and 64 KB chunk of its payload.
//
// # By partition
//
// [Meter.Partitions] takes a snapshot of the same units by where they
// land: the write units of each partition key value of the table and of
// each secondary index (a transactional write twice on the item's
// partition, an index write once on its entry's), and the read units of the
// table and of each index. It is what DynamoDB's per-partition limits
// (1,000 write and 3,000 read units a second) are measured against.
//
// # Item images and the shadow client
//
// Write units depend on items the request does not carry (the item a put
// replaces, the item an update produces). The meter gets them with the
// least extra traffic it can:
//
//   - PutItem and DeleteItem: none. The meter asks the request itself for
//     ReturnValues ALL_OLD and ReturnValuesOnConditionCheckFailure ALL_OLD
//     when the caller did not, and removes what came back from the output and
//     the error before the caller sees them; the caller's input is restored.
//   - UpdateItem: one strongly consistent GetItem on the shadow client,
//     after the update (two when the caller asked for UPDATED_OLD or
//     UPDATED_NEW).
//   - BatchWriteItem: one BatchGetItem before, per 100 keys.
//   - TransactWriteItems: one BatchGetItem before, and one after when the
//     transaction updates items.
//   - BatchGetItem and TransactGetItems with a projection: one BatchGetItem
//     after, for the whole items' sizes.
//   - GetItem, Query and Scan: none. Their units depend on whole items the
//     response does not carry (a projection or a filter drops attributes
//     and items, not their cost); the meter takes the units the endpoint
//     reports (asking ReturnConsumedCapacity TOTAL when the caller did not,
//     and removing it from the output), after tests showed that DynamoDB
//     Local computes them by the documented rules, and corrects the one case
//     where it does not (an empty page). Re-running each query on the shadow
//     client would have doubled the read load being measured.
//
// Shadow reads are not counted in the usage. They do add load and latency
// to the endpoint: a benchmark that reports both latency and cost from one
// metered run reports latencies that include them.
//
// # Limits
//
// Images read before or after a request are not atomic with it: another
// writer may change the item in between, and the units of that request are
// then computed from the other writer's image. Under contention on the same
// items this is an approximation; on distinct items it is exact.
//
// A transaction DynamoDB cancels reports no capacity and no page documents
// its cost: the meter bills each action as a failed conditional write at
// the transactional rate, an upper bound. A TransactWriteItems replayed with
// the ClientRequestToken of a transaction this meter saw commit within 10
// minutes is billed as transactional reads of its items, as DynamoDB
// documents; the meter cannot recognise replays of transactions it did not
// see commit. SDK retries inside one call are neither counted as requests
// nor billed; requests that fail for reasons other than a condition (a
// validation error, throttling) are counted and cost no units.
//
// Not modelled: storage, streams, backups, global table replication, data
// transfer, time-to-live deletes (free), free tiers, PartiQL statements
// (counted, no units), FIFO queue prices, and DynamoDB control-plane calls
// (counted as requests; they cost nothing). Read units of GetItem, Query and
// Scan are as exact as the endpoint's report: exact against DynamoDB, and
// against DynamoDB Local as far as the tests go.
//
// Failures of the meter's own reads do not fail the caller's request: they
// are kept, and [Meter.Err] returns them.
package billing
