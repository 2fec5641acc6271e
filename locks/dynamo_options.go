package locks

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/duradyn/duradyn/internal/clockskew"
	"github.com/duradyn/duradyn/queues"
)

// API is the part of the DynamoDB client a [Dynamo] locker calls; the SDK's
// [dynamodb.Client] satisfies it, and so does every client the dynamo
// package accepts. These are the only DynamoDB operations a locker calls.
type API interface {
	// UpdateItem is [dynamodb.Client.UpdateItem].
	UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	// Query is [dynamodb.Client.Query].
	Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// DynamoOptions configures a [Dynamo] locker. TableName is required;
// everything else has a default.
type DynamoOptions struct {
	// TableName is the duradyn table (the shape of
	// [github.com/duradyn/duradyn/tables.Default]). Required.
	TableName string

	// Client overrides the DynamoDB client built from the aws.Config given
	// to [NewDynamo]. Tests use it to count or fail requests.
	Client API

	// Signals carries release notices to the lockers of other processes
	// (kind [queues.Lock] on the orchestrator queue). Default nil: notices
	// reach only the blocked Acquire calls of this locker, and those of
	// other lockers wake when the lease they saw ends. The locker does not
	// close it.
	Signals *queues.Signals

	// Owner is the locker's owner token. Default: a random token of 26
	// characters. At most [MaxOwnerBytes] bytes of UTF-8.
	Owner string

	// Clock is the time of leases and waits. Default [SystemClock]. Hosts
	// sharing a table should be NTP-synchronised: a clock ahead of the
	// others takes locks whose leases have not ended for the others yet.
	Clock Clock

	// ClockSkewWarning is the skew between Clock and DynamoDB's clock (see
	// [Dynamo.ClockSkew]) above which the locker logs a warning through
	// Logger. Default [DefaultClockSkewWarning].
	ClockSkewWarning time.Duration

	// Logger receives, as warnings, the problems the locker handles itself
	// (a release notice that could not be sent, a clock skew beyond
	// ClockSkewWarning), with attributes such as "key" and "error". It is
	// called from several goroutines. Nil (the default) discards them.
	Logger *slog.Logger

	// shards is the number of partitions of the listing index the
	// holders are spread over: LockShards, except in this package's tests.
	shards int
}

// DefaultClockSkewWarning is the default of
// [DynamoOptions.ClockSkewWarning].
const DefaultClockSkewWarning = clockskew.DefaultWarning

// LockShards is the number of partitions of the instances index the holders
// of a table's locks are spread over (K#0 to K#15). It is part of the
// stored data's layout and fixed, so that every process and the command
// line list the same partitions. [Dynamo.List] reads every one.
const LockShards = 16

// resolve applies defaults to a copy of o and validates it.
func (o DynamoOptions) resolve() (DynamoOptions, error) {
	if o.TableName == "" {
		return o, fmt.Errorf("%w: TableName is required", ErrInvalidOptions)
	}
	if o.shards == 0 {
		o.shards = LockShards
	}
	if o.Owner == "" {
		o.Owner = newToken()
	}
	if err := checkOwner(o.Owner); err != nil {
		return o, fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if o.Clock == nil {
		o.Clock = SystemClock{}
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
