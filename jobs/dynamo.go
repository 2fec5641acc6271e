package jobs

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/internal/clockskew"
	"github.com/duradyn/duradyn/queues"
)

// DynamoAPI is the part of the DynamoDB client a [DynamoStore] calls; the
// SDK's [dynamodb.Client] satisfies it. It lists every DynamoDB operation
// the store uses.
type DynamoAPI interface {
	// GetItem is [dynamodb.Client.GetItem].
	GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	// BatchGetItem is [dynamodb.Client.BatchGetItem].
	BatchGetItem(ctx context.Context, params *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	// PutItem is [dynamodb.Client.PutItem].
	PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	// UpdateItem is [dynamodb.Client.UpdateItem].
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	// DeleteItem is [dynamodb.Client.DeleteItem].
	DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	// Query is [dynamodb.Client.Query].
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// DynamoOptions configures a [DynamoStore]. TableName is required;
// everything else has a default.
type DynamoOptions struct {
	// TableName is the duradyn table, created with the shape of
	// [github.com/duradyn/duradyn/tables.Default] (by the Terraform module
	// or tables.Ensure). Jobs share it with orchestrations under keys of
	// their own. Required.
	TableName string

	// Client overrides the DynamoDB client built from the aws.Config given
	// to [NewDynamoStore]. Tests use it to count or fail requests.
	Client DynamoAPI

	// Signals, when set, is told of every write that gives a job a next
	// run time or moves it earlier: the store sends a [queues.Schedule]
	// signal with the job's shard and next run time, which wakes the
	// schedulers of this process and, over SQS, of the others. Default
	// nil: no signals (schedulers find due jobs when they poll).
	Signals *queues.Signals

	// Now is the clock [DynamoStore.ClockSkew] compares with DynamoDB's:
	// set it to the schedulers' Clock.Now when they run on another clock
	// than the system's. Default [time.Now]. The store writes no time of
	// its own.
	Now func() time.Time

	// ClockSkewWarning is the skew between Now and DynamoDB's clock above
	// which the store logs a warning through Logger. Default
	// [DefaultClockSkewWarning].
	ClockSkewWarning time.Duration

	// Logger receives, as warnings, the problems the store handles itself
	// (a signal that could not be sent after its write succeeded, a clock
	// skew beyond ClockSkewWarning), with attributes such as "job" and
	// "error". Nil (the default) discards them.
	Logger *slog.Logger

	// shards is the number of partitions of the instances index the jobs
	// are spread over: JobShards, except in this package's tests.
	shards int
}

// DefaultClockSkewWarning is the default of
// [DynamoOptions.ClockSkewWarning].
const DefaultClockSkewWarning = clockskew.DefaultWarning

// JobShards is the number of partitions of the instances index the jobs of
// a table are spread over (J#0 to J#15). It is part of the stored data's
// layout and fixed, so that every process and the command line read the
// same partitions. A query reads every one, in parallel.
const JobShards = 16

// ErrInvalidOptions is wrapped by the error [NewDynamoStore] returns for
// options it cannot use.
var ErrInvalidOptions = errors.New("jobs: invalid options")

// resolve applies defaults to a copy of o and validates it.
func (o DynamoOptions) resolve() (DynamoOptions, error) {
	if o.TableName == "" {
		return o, fmt.Errorf("%w: TableName is required", ErrInvalidOptions)
	}
	if o.shards == 0 {
		o.shards = JobShards
	}
	warn, err := clockskew.Warning(o.ClockSkewWarning)
	if err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	o.ClockSkewWarning = warn
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// DynamoStore is a [Store] in the duradyn DynamoDB table, shared safely by
// any number of processes.
//
// # Rows
//
// One item per job:
//
//	pk = J#<job id>, sk = #JOB
//
// with the job's fields as attributes named as in its JSON form
// (status, next_run_time, if_missed, misfire_threshold_seconds,
// last_run_time, last_scheduled_time, name, trigger_type, trigger_args),
// except metadata, which is the map attribute M of strings. Times are
// numbers of epoch milliseconds: stores keep times to the millisecond
// (truncated), so a job reads back equal to the job written once its times
// are truncated so. Trigger arguments are a string. Absent values (nil
// times, empty metadata, name, trigger type and arguments) are absent
// attributes. The attribute wid holds the id of the last create or
// compare-and-swap that wrote the item, so that an outcome lost in the
// network can be told apart from another writer's (see CompareAndSwap).
//
// Every job is listed in the sparse instances index under li_pk =
// J#<shard> (shard = fnv32a(job id) mod JobShards) and li_sk = <next run time
// ms, 20 digits>#<job id>, or ~#<job id> without a next run time, so each
// shard's jobs sort by next run time, then id, those without one last.
// Every write keeps li_sk in step with next_run_time.
//
// # Requests and cost
//
// Create is one conditional PutItem; Get one consistent GetItem; Update,
// CompareAndSwap and Delete one UpdateItem or DeleteItem each: one write of
// the item's size (1 WCU per KB), and one read for Get (1 RCU per 4 KB).
// The index costs one more write per write that changes li_sk or status.
// Query and Count read the index (see [DynamoStore.Query]). No operation
// scans the table.
type DynamoStore struct {
	o    DynamoOptions
	skew *clockskew.Watch
}

var _ Store = (*DynamoStore)(nil)

// NewDynamoStore returns a store on the table optFns name, with a client
// built from cfg (the SDK's default chain: AWS_ENDPOINT_URL*, profiles and
// roles all apply) unless DynamoOptions.Client is given. It makes no
// request.
func NewDynamoStore(cfg aws.Config, optFns ...func(*DynamoOptions)) (*DynamoStore, error) {
	var o DynamoOptions
	for _, fn := range optFns {
		if fn != nil {
			fn(&o)
		}
	}
	o, err := o.resolve()
	if err != nil {
		return nil, err
	}
	if o.Client == nil {
		o.Client = dynamodb.NewFromConfig(cfg)
	}
	skew := clockskew.New("jobs", o.Now, o.ClockSkewWarning, o.Logger,
		"a scheduler fires a job when its own clock reaches the job's time, early when ahead and late when behind")
	return &DynamoStore{o: o, skew: skew}, nil
}

// ClockSkew returns how far DynamoOptions.Now runs ahead of DynamoDB's
// clock (negative: behind), measured from the Date headers of the
// responses to the store's requests so far, and the half-width of the
// interval the skew is known to lie in. ok is false before the first
// response. A skew beyond [DynamoOptions.ClockSkewWarning] is logged
// through DynamoOptions.Logger once each time it is first seen.
func (s *DynamoStore) ClockSkew() (skew, uncertainty time.Duration, ok bool) {
	return s.skew.Estimate()
}

// Shard returns the index shard of the job with id: the Shard of the
// [queues.Schedule] signals sent for it.
func (s *DynamoStore) Shard(id string) int { return jobShard(id, s.o.shards) }
