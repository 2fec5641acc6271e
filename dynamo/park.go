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

// Parking keeps rows nothing can use from hiding those behind them
// (docs/design.md §8). Rows another process may use (filtered, undecodable)
// are parked in this process only, without a write. Orphan messages are
// parked for everyone by moving their ready key forward: the start's own
// row leads fetches to the instance, whose turn takes them anyway.
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

// park makes this process's sweeps pass over k (instance or row key) for
// a backoff that doubles each time k is parked again.
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

// filteredKey is instance's park key under filter: another may admit it.
func filteredKey(instance string, filter *provider.CapabilityFilter) string {
	if filter == nil {
		return instance + "\x00*"
	}
	return fmt.Sprintf("%s\x00%v", instance, filter.SupportedVersions)
}

// candidateFailed parks a candidate (instance or row key) whose stored data
// this process cannot read, and logs it: such data never fails a fetch.
// Other errors are returned.
func (p *Provider) candidateFailed(k string, err error) error {
	if !errors.Is(err, provider.ErrCorruptData) {
		return err
	}
	p.hints.park(k, p.nowMs())
	p.o.Logger.Warn("dynamo: passing over corrupt work for a while", "key", k, "error", err)
	return nil
}

// parkOrphans moves forward the ready keys of a missing instance's visible
// messages by as long as they waited, each conditioned on an unchanged row.
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
