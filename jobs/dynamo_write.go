package jobs

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go"

	"github.com/duradyn/duradyn/queues"
	"github.com/duradyn/duradyn/tables"
)

// Create stores a new job; see [Store.Create].
//
// One PutItem conditional on attribute_not_exists(pk), carrying a fresh
// write id; on a failed condition DynamoDB returns the item it found
// (ReturnValuesOnConditionCheckFailure ALL_OLD). When that item holds this
// call's write id, the condition failed on a resend of this very request
// after its response was lost, and Create succeeds; otherwise the job
// exists.
func (s *DynamoStore) Create(ctx context.Context, job Job) (Job, error) {
	job, err := normalJob(job)
	if err != nil {
		return Job{}, err
	}
	writeID := rand.Text()
	b := newExprBuilder()
	_, err = s.o.Client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:                           aws.String(s.o.TableName),
		Item:                                jobItem(job, s.Shard(job.ID), writeID),
		ConditionExpression:                 aws.String("attribute_not_exists(" + b.name(tables.AttrPK) + ")"),
		ExpressionAttributeNames:            b.names,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, s.skew.Option)
	if failed, ok := asConditionFailed(err); ok {
		if writeIDOf(failed.Item) != writeID {
			return Job{}, fmt.Errorf("%w: %q", ErrJobExists, job.ID)
		}
	} else if err != nil {
		return Job{}, writeError("create", job.ID, err)
	}
	s.signal(ctx, nil, job)
	return copyJob(job), nil
}

// Get returns the job with id; see [Store.Get]. One consistent GetItem.
func (s *DynamoStore) Get(ctx context.Context, id string) (Job, error) {
	if checkID(id) != nil {
		return Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	out, err := s.o.Client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String(s.o.TableName),
		Key:            jobKey(id),
		ConsistentRead: aws.Bool(true),
	}, s.skew.Option)
	if err != nil {
		return Job{}, fmt.Errorf("jobs: get %q: %w", id, err)
	}
	if len(out.Item) == 0 {
		return Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	return jobFromItem(out.Item)
}

// Update applies changes to the job with id; see [Store.Update].
//
// One UpdateItem conditional on attribute_exists(pk), returning the item
// as it was (ALL_OLD), to which the store applies the changes itself to
// return the job as updated and to tell whether the next run time moved
// earlier. Empty changes are one consistent GetItem instead.
func (s *DynamoStore) Update(ctx context.Context, id string, changes Changes) (Job, error) {
	changes, err := normalChanges("change", changes)
	if err != nil {
		return Job{}, err
	}
	if len(changes) == 0 || checkID(id) != nil {
		return s.Get(ctx, id)
	}
	b := newExprBuilder()
	update := b.update(id, changes, "")
	out, err := s.o.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.o.TableName),
		Key:                       jobKey(id),
		UpdateExpression:          aws.String(update),
		ConditionExpression:       aws.String(b.exists()),
		ExpressionAttributeNames:  b.names,
		ExpressionAttributeValues: b.valuesOrNil(),
		ReturnValues:              types.ReturnValueAllOld,
	}, s.skew.Option)
	if _, ok := asConditionFailed(err); ok {
		return Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	if err != nil {
		return Job{}, writeError("update", id, err)
	}
	before, err := jobFromItem(out.Attributes)
	if err != nil {
		return Job{}, err
	}
	after := copyJob(applyChanges(copyJob(before), changes))
	s.signal(ctx, &before, after)
	return after, nil
}

// CompareAndSwap applies changes when expected holds; see
// [Store.CompareAndSwap].
//
// One UpdateItem conditional on attribute_exists(pk) and on each expected
// field (equality, or attribute_not_exists for a nil or empty value),
// which also records a fresh write id; it returns the item as it was
// (ALL_OLD), to which the store applies the changes itself. On a failed
// condition DynamoDB returns the current item
// (ReturnValuesOnConditionCheckFailure ALL_OLD): none means the job does
// not exist; one holding this call's write id means the update applied and
// the condition failed on a resend of it after a lost response, so the
// call reports applied; any other is the current job, not applied.
//
// A lost response is reported as applied only while the item still holds
// this call's write id: if another compare-and-swap applied between the
// lost write and its resend, the call reports not applied (with the job as
// it is) although its own write applied before that other one.
func (s *DynamoStore) CompareAndSwap(ctx context.Context, id string, expected, changes Changes) (bool, Job, error) {
	expected, err := normalChanges("expected", expected)
	if err != nil {
		return false, Job{}, err
	}
	changes, err = normalChanges("change", changes)
	if err != nil {
		return false, Job{}, err
	}
	if checkID(id) != nil {
		return false, Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
	}
	writeID := rand.Text()
	b := newExprBuilder()
	update := b.update(id, changes, writeID)
	cond := strings.Join(append([]string{b.exists()}, b.expect(expected)...), " AND ")
	out, err := s.o.Client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                           aws.String(s.o.TableName),
		Key:                                 jobKey(id),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            b.names,
		ExpressionAttributeValues:           b.valuesOrNil(),
		ReturnValues:                        types.ReturnValueAllOld,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}, s.skew.Option)
	if failed, ok := asConditionFailed(err); ok {
		if len(failed.Item) == 0 {
			return false, Job{}, fmt.Errorf("%w: %q", ErrJobNotFound, id)
		}
		current, err := jobFromItem(failed.Item)
		if err != nil {
			return false, Job{}, err
		}
		if writeIDOf(failed.Item) != writeID {
			return false, current, nil
		}
		if _, moved := changes[FieldNextRunTime]; moved {
			s.signal(ctx, nil, current)
		}
		return true, current, nil
	}
	if err != nil {
		return false, Job{}, writeError("compare and swap", id, err)
	}
	before, err := jobFromItem(out.Attributes)
	if err != nil {
		return false, Job{}, err
	}
	after := copyJob(applyChanges(copyJob(before), changes))
	s.signal(ctx, &before, after)
	return true, after, nil
}

// Delete removes the job with id; see [Store.Delete]. One DeleteItem
// returning the item it deleted (ALL_OLD). A delete whose response was
// lost and that the SDK sent again reports false.
func (s *DynamoStore) Delete(ctx context.Context, id string) (bool, error) {
	if checkID(id) != nil {
		return false, nil
	}
	out, err := s.o.Client.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName:    aws.String(s.o.TableName),
		Key:          jobKey(id),
		ReturnValues: types.ReturnValueAllOld,
	}, s.skew.Option)
	if err != nil {
		return false, fmt.Errorf("jobs: delete %q: %w", id, err)
	}
	return len(out.Attributes) > 0, nil
}

// signal tells the schedulers, through Signals, that after became due
// earlier than before (nil for a new job): it has a next run time, and
// before had none, a later one, or another status than after's scheduled.
func (s *DynamoStore) signal(ctx context.Context, before *Job, after Job) {
	if s.o.Signals == nil || after.NextRunTime == nil {
		return
	}
	if before != nil && !earlier(after.NextRunTime, before.NextRunTime) &&
		(after.Status != StatusScheduled || before.Status == StatusScheduled) {
		return
	}
	sig := queues.Signal{Kind: queues.Schedule, Shard: s.Shard(after.ID), VisibleAt: *after.NextRunTime}
	if err := s.o.Signals.Notify(ctx, sig); err != nil {
		s.o.Logger.Warn("jobs: schedule signal not sent", "job", after.ID, "next_run_time", *after.NextRunTime, "error", err)
	}
}

// earlier reports whether a is a time before b, a nil b counting as
// later than any time.
func earlier(a, b *time.Time) bool {
	return a != nil && (b == nil || a.Before(*b))
}

// writeError wraps the error of a write of the job with id. DynamoDB
// refuses an item over 400 KB with a ValidationException, having written
// nothing: that error wraps [ErrInvalidJob] too.
func writeError(op, id string, err error) error {
	var api smithy.APIError
	if errors.As(err, &api) && api.ErrorCode() == "ValidationException" && strings.Contains(strings.ToLower(api.ErrorMessage()), "size") {
		return fmt.Errorf("%w: job %q is too large for one DynamoDB item (400 KB): %w", ErrInvalidJob, id, err)
	}
	return fmt.Errorf("jobs: %s %q: %w", op, id, err)
}

// asConditionFailed returns err's ConditionalCheckFailedException, if it
// is one.
func asConditionFailed(err error) (*types.ConditionalCheckFailedException, bool) {
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return failed, true
	}
	return nil, false
}
