package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// Rows a sweep finds but cannot use must not hide the rows behind them
// (docs/design.md §8). Two kinds of parking keep them out of the way:
//
//   - In this process only, without a write: instances its capability
//     filter rejects and rows it cannot decode (another process, of a newer
//     version, may use them). Sweeps pass over them, paging further, for a
//     backoff that doubles from localParkFirst to localParkMax.
//   - For every process, by moving the rows' ready key forward: messages
//     for an instance that does not exist and has no start queued. Nothing
//     can use them until the start arrives, and the start's own row leads
//     fetches to the instance, whose turn then takes them whatever their
//     ready key says. They are parked for as long as they have already
//     waited, between orphanParkMin and orphanParkMax.
const (
	localParkFirst = time.Second
	localParkMax   = 30 * time.Second
	orphanParkMin  = time.Second
	orphanParkMax  = time.Hour
	// orphanParkRows bounds the rows one fetch parks for one instance.
	orphanParkRows = 25
)

// parkHint is a row or instance this process passes over until until.
type parkHint struct {
	until   int64
	backoff time.Duration
}

// park makes sweeps of this process pass over k (an instance id or a row
// key) from nowMs for a backoff that doubles each time k is parked again.
func (h *hints) park(k string, nowMs int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	backoff := localParkFirst
	if old, ok := h.parked[k]; ok && nowMs-old.until < durMs(localParkMax) {
		backoff = min(2*old.backoff, localParkMax)
	}
	h.parked[k] = parkHint{until: nowMs + durMs(backoff), backoff: backoff}
	if len(h.parked) > maxCachedTurns {
		clear(h.parked)
	}
}

// isParked reports whether k is parked at nowMs.
func (h *hints) isParked(k string, nowMs int64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.parked[k].until > nowMs
}

// filteredKey names instance, as rejected by filter, in the park hints: a
// fetch with another filter may admit it.
func filteredKey(instance string, filter *provider.CapabilityFilter) string {
	if filter == nil {
		return instance + "\x00*"
	}
	return fmt.Sprintf("%s\x00%v", instance, filter.SupportedVersions)
}

// candidateFailed decides what a sweep does with a candidate (an instance,
// or a worker row's key) whose attempt failed: stored data this process
// cannot read parks the candidate here and is logged, not returned; any
// other error is returned, for the sweep to report when it finds no work.
func (p *Provider) candidateFailed(k string, err error) error {
	if !errors.Is(err, provider.ErrCorruptData) {
		return err
	}
	p.hints.park(k, p.nowMs())
	p.o.Logger.Warn("dynamo: passing over corrupt work for a while", "key", k, "error", err)
	return nil
}

// parkOrphans moves the ready key of the visible messages of an instance
// that does not exist forward (see above), each conditioned on the row
// being unchanged.
func (p *Provider) parkOrphans(ctx context.Context, st *instanceState, batch []queueRow, nowMs int64) error {
	pk := keys.InstancePK(st.id)
	for _, m := range batch[:min(len(batch), orphanParkRows)] {
		wait := time.Duration(nowMs-m.visible) * time.Millisecond
		until := nowMs + durMs(min(max(wait, orphanParkMin), orphanParkMax))
		_, err := p.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:                 p.table,
			Key:                       key(pk, m.sk),
			UpdateExpression:          aws.String("SET #rs = :rs"),
			ConditionExpression:       aws.String("#vis = :vis"),
			ExpressionAttributeNames:  map[string]string{"#rs": attrReadySK, "#vis": attrVisible},
			ExpressionAttributeValues: map[string]types.AttributeValue{":rs": s(readySK(until, m.seq)), ":vis": n(m.visible)},
		})
		if err != nil && !conditionFailed(err) {
			return err
		}
	}
	p.o.Logger.Warn("dynamo: parked messages queued for an instance that does not exist", "instance", st.id, "messages", min(len(batch), orphanParkRows))
	return nil
}
