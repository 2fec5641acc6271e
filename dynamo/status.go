package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// endedResultMaxBytes bounds the copy of an ended execution's result on
// the instance record, so that with a 256 KB custom status it fits an
// item and fetches stay cheap; a larger result is read from the history.
const endedResultMaxBytes = 16 << 10

// endedResult is how the current execution ended, copied onto the record
// so that InstanceStatus reads one item.
type endedResult struct {
	output  *string              // a Completed execution's output
	failure string               // a Failed execution's details, as JSON
	stored  types.AttributeValue // output as a payload, set by the turn
}

// endedResult returns the result copy for m, the record the turn writes:
// made from the commit if the turn ends the execution, else kept from the
// record; nil while it runs or when it does not fit.
func (tp *turnPlanner) endedResult(m *metaRow) *endedResult {
	if !ended(m.status) {
		return nil
	}
	commit := tp.commit
	if m.current != commit.ExecutionID || commit.Metadata.Status == "" {
		return m.result
	}
	r := &endedResult{}
	switch m.status {
	case provider.StatusCompleted:
		if commit.Metadata.Output != nil {
			out := *commit.Metadata.Output
			r.output = &out
		}
	case provider.StatusFailed:
		details := provider.FailureOf(commit.HistoryDelta)
		if details == nil {
			return nil
		}
		b, err := json.Marshal(details)
		if err != nil {
			return nil
		}
		r.failure = string(b)
	}
	if r.output != nil && len(*r.output)+len(r.failure) > endedResultMaxBytes || len(r.failure) > endedResultMaxBytes {
		return nil
	}
	if r.output != nil {
		r.stored = tp.p.payload(*r.output)
	}
	return r
}

// put writes r onto the instance record row.
func (r *endedResult) put(row item) {
	if r == nil {
		return
	}
	if r.output != nil {
		row[attrResultOutput] = r.stored
		if r.stored == nil {
			row[attrResultOutput] = s(*r.output)
		}
	}
	if r.failure != "" {
		row[attrResultFailure] = s(r.failure)
	}
}

// parseEndedResult decodes the record's result copy; nil without one.
func parseEndedResult(d *decoder, row item) *endedResult {
	_, hasOutput := row[attrResultOutput]
	_, hasFailure := row[attrResultFailure]
	if !hasOutput && !hasFailure {
		return nil
	}
	return &endedResult{output: d.optPayload(row, attrResultOutput), failure: d.str(row, attrResultFailure)}
}

// InstanceStatus returns the instance's status: one consistent GetItem of
// its record. Without a record its control rows are queried (a queued
// start is Pending); a result over 16 KB is read from the history.
func (p *Provider) InstanceStatus(ctx context.Context, instance string) (*provider.InstanceStatus, error) {
	return p.instanceStatus(ctx, instance, 1)
}

// instanceStatus is InstanceStatus's attempt-th read of the record.
func (p *Provider) instanceStatus(ctx context.Context, instance string, attempt int) (*provider.InstanceStatus, error) {
	const op = provider.OpInstanceStatus
	out, err := p.db.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: p.table, Key: key(keys.InstancePK(instance), keys.Meta), ConsistentRead: aws.Bool(true),
		ProjectionExpression: aws.String("#cur, #st, #cs, #csv, #out, #fail"),
		ExpressionAttributeNames: map[string]string{
			"#cur": attrCurrent, "#st": attrStatus, "#cs": attrCStatus, "#csv": attrCStatusVer,
			"#out": attrResultOutput, "#fail": attrResultFailure,
		},
	})
	if err != nil {
		return nil, translate(op, err)
	}
	if out.Item == nil {
		return p.statusWithoutRecord(ctx, instance, attempt)
	}
	var d decoder
	st := &provider.InstanceStatus{
		InstanceID: instance, ExecutionID: d.uint(out.Item, attrCurrent), Status: d.str(out.Item, attrStatus),
		CustomStatus: d.optStr(out.Item, attrCStatus), CustomStatusVersion: d.uint(out.Item, attrCStatusVer),
	}
	result := parseEndedResult(&d, out.Item)
	if d.err != nil {
		return nil, provider.Corrupt(op, d.err, "instance record of %q: %v", instance, d.err)
	}
	st.Status = cmp.Or(st.Status, provider.StatusUnknown)
	if !ended(st.Status) {
		return st, nil
	}
	if result == nil {
		return p.statusFromHistory(ctx, st)
	}
	st.Output = result.output
	if result.failure != "" {
		if st.Failure, err = provider.UnmarshalErrorDetails([]byte(result.failure)); err != nil {
			return nil, provider.Corrupt(op, err, "failure of instance %q: %v", instance, err)
		}
	}
	return st, nil
}

// statusWithoutRecord is the status of an instance without a record:
// pending when its start is queued. A record made meanwhile is read again,
// at most twice more, since InstanceInfo lacks the output.
func (p *Provider) statusWithoutRecord(ctx context.Context, instance string, attempt int) (*provider.InstanceStatus, error) {
	info, err := p.InstanceInfo(ctx, instance)
	if errors.Is(err, provider.ErrNotFound) {
		return nil, provider.InstanceNotFound(provider.OpInstanceStatus, instance)
	}
	if err != nil {
		return nil, err
	}
	if info.Status == provider.StatusPending {
		return &provider.InstanceStatus{InstanceID: instance, Status: provider.StatusPending}, nil
	}
	if attempt >= 3 {
		err := errors.New("the instance record appeared and vanished while its status was read")
		return nil, provider.Retryable(provider.OpInstanceStatus, err, "instance %q: %v", instance, err)
	}
	return p.instanceStatus(ctx, instance, attempt+1)
}

// statusFromHistory completes st's result from the execution's history.
func (p *Provider) statusFromHistory(ctx context.Context, st *provider.InstanceStatus) (*provider.InstanceStatus, error) {
	events, err := p.readHistory(ctx, provider.OpInstanceStatus, st.InstanceID, st.ExecutionID)
	if err != nil {
		return nil, err
	}
	for i := len(events) - 1; i >= 0; i-- {
		if c, ok := events[i].Kind.(provider.OrchestrationCompleted); ok && st.Status == provider.StatusCompleted {
			st.Output = &c.Output
			return st, nil
		}
	}
	if st.Status == provider.StatusFailed {
		st.Failure = provider.FailureOf(events)
	}
	if st.Status == provider.StatusFailed && st.Failure == nil {
		err := fmt.Errorf("execution %d failed without an OrchestrationFailed event", st.ExecutionID)
		return nil, provider.Corrupt(provider.OpInstanceStatus, err, "instance %q: %v", st.InstanceID, err)
	}
	return st, nil
}

var _ provider.StatusReader = (*Provider)(nil)
