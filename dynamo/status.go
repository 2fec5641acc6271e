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

// endedResultMaxBytes bounds the copy of an ended execution's output and
// failure on the instance record: with the custom status (up to 256 KB)
// the record stays within an item's 400 KB, and fetches of an ended
// instance, which read the record, stay cheap. A larger result is read
// from the history.
const endedResultMaxBytes = 16 << 10

// endedResult is how an instance's current execution ended, copied onto
// its record by the turn that ends it, so that InstanceStatus reads one
// item whatever the history's length.
type endedResult struct {
	// output is a Completed execution's output.
	output *string
	// failure is a Failed execution's details, as JSON.
	failure string
	// stored is output's stored form (a payload), set by the turn that
	// makes the copy.
	stored types.AttributeValue
}

// endedResult returns the copy of how the execution ended that m, the
// record the turn writes, holds: made from the commit when the turn ends
// m's current execution, kept from the record otherwise, nil while the
// execution runs or when it does not fit.
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

// parseEndedResult decodes the copy of how the current execution ended
// from the instance record row; nil when it holds none.
func parseEndedResult(d *decoder, row item) *endedResult {
	_, hasOutput := row[attrResultOutput]
	_, hasFailure := row[attrResultFailure]
	if !hasOutput && !hasFailure {
		return nil
	}
	return &endedResult{output: d.optPayload(row, attrResultOutput), failure: d.str(row, attrResultFailure)}
}

// InstanceStatus returns the instance's status from its record: one
// consistent GetItem whatever the history's length. Two cases read more:
// an instance without a record (a Query of its control rows finds a
// queued start, or nothing), and an ended execution whose output and
// failure did not fit the record's copy (endedResultMaxBytes: its history
// is read).
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

// statusWithoutRecord is the status of an instance whose record the
// attempt-th read did not find: pending when its start is queued. A record
// made since (the first turn committed between the two reads) is read
// again, at most twice more: InstanceInfo does not hold the output.
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

// statusFromHistory completes st, an ended execution's status whose
// result the record does not hold, from the execution's history.
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
