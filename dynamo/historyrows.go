package dynamo

import (
	"encoding/json"
	"fmt"
	"maps"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/internal/itemsize"
	"github.com/duradyn/duradyn/provider"
)

// A history row holds one event (attrEvent) or a run of consecutive ids
// (attrEvents, counted in attrEventCount for keys-only readers) under its
// first event's sort key (docs/reads.md, history rows).
const (
	attrEvents     = "evs"
	attrEventCount = "nev"
)

// packedRowBytes bounds a row of several events; one event may be larger.
const packedRowBytes = 32 * 1024

// encodedEvent is an event and its stored JSON.
type encodedEvent struct {
	id   uint64
	data string
}

// encodeEvents encodes events for storage; one that cannot be encoded or
// does not fit an item fails with [provider.ErrInvalidInput].
func encodeEvents(op, instance string, executionID uint64, events []provider.Event) ([]encodedEvent, error) {
	pk := keys.InstancePK(instance)
	out := make([]encodedEvent, 0, len(events))
	for _, e := range events {
		data, err := json.Marshal(e)
		if err != nil {
			return nil, provider.Permanent(op, provider.ErrInvalidInput, "encode event %d: %v", e.EventID, err)
		}
		row := key(pk, keys.HistorySK(executionID, e.EventID))
		row[attrEvent] = s(string(data))
		if size := itemsize.ItemSize(row); size > MaxItemBytes {
			return nil, provider.Permanent(op, provider.ErrInvalidInput,
				"event %d of instance %q is %d bytes stored; one event must fit one DynamoDB item (%d bytes)",
				e.EventID, instance, size, MaxItemBytes)
		}
		out = append(out, encodedEvent{id: e.EventID, data: string(data)})
	}
	return out, nil
}

// historyRun is the events of one history row.
type historyRun struct {
	row item
	// plain is row uncompressed, for the history cache.
	plain  item
	first  uint64
	events int
}

// packHistory packs events into rows of consecutive ids, up to
// packedRowBytes uncompressed, compressed when worth it if compress.
func packHistory(instance string, executionID uint64, events []encodedEvent, compress bool) []historyRun {
	pk := keys.InstancePK(instance)
	var runs []historyRun
	for i := 0; i < len(events); {
		row := key(pk, keys.HistorySK(executionID, events[i].id))
		size := itemsize.ItemSize(row) + len(attrEvents) + 3 + len(attrEventCount) + 21
		j := i
		for j < len(events) && (j == i || events[j].id == events[j-1].id+1) {
			add := len(events[j].data) + 1
			if j > i && size+add > packedRowBytes {
				break
			}
			size += add
			j++
		}
		parts := make([]string, 0, j-i)
		for _, e := range events[i:j] {
			parts = append(parts, e.data)
		}
		var packed []byte
		if compress {
			packed, _ = compressParts(parts) // nil when not worth it
		}
		if j-i == 1 {
			row[attrEvent] = s(parts[0])
		} else {
			row[attrEvents] = stringList(parts)
			row[attrEventCount] = nu(uint64(j - i))
		}
		plain := row
		if packed != nil {
			row = maps.Clone(plain)
			if j-i == 1 {
				row[attrEvent] = &types.AttributeValueMemberB{Value: packed}
			} else {
				row[attrEvents] = &types.AttributeValueMemberB{Value: packed}
			}
		}
		runs = append(runs, historyRun{row: row, plain: plain, first: events[i].id, events: j - i})
		i = j
	}
	return runs
}

// rowEvents returns the stored JSON of history row r's events, in order.
func rowEvents(r item) ([]string, error) {
	if v, ok := r[attrEvents]; ok {
		list, isL := v.(*types.AttributeValueMemberL)
		if !isL {
			if _, isB := v.(*types.AttributeValueMemberB); !isB {
				return nil, fmt.Errorf("%w: attribute %q of %s is %T, not a list", provider.ErrCorruptData, attrEvents, describeKey(r), v)
			}
			parts, err := payloadParts(r, attrEvents, v)
			if err != nil {
				return nil, err
			}
			if n, err := uintAttr(r, attrEventCount); err != nil || n != uint64(len(parts)) {
				return nil, fmt.Errorf("%w: history row %s holds %d events, not the %d it counts", provider.ErrCorruptData, describeKey(r), len(parts), n)
			}
			return parts, nil
		}
		out := make([]string, len(list.Value))
		for i, e := range list.Value {
			sv, isS := e.(*types.AttributeValueMemberS)
			if !isS {
				return nil, fmt.Errorf("%w: event %d of %s is %T, not a string", provider.ErrCorruptData, i, describeKey(r), e)
			}
			out[i] = sv.Value
		}
		return out, nil
	}
	data, ok, err := payloadAttr(r, attrEvent)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("%w: history row %s holds no event", provider.ErrCorruptData, describeKey(r))
	}
	return []string{data}, nil
}

// rowEventCount returns how many events history row r holds (its count
// serves rows read keys-only).
func rowEventCount(r item) uint64 {
	if v, ok := r[attrEvents].(*types.AttributeValueMemberL); ok {
		return uint64(len(v.Value))
	}
	if n, err := uintAttr(r, attrEventCount); err == nil && n > 0 {
		return n
	}
	return 1
}

// historyEvents returns the number of events history rows hold.
func historyEvents(rows []item) uint64 {
	var total uint64
	for _, r := range rows {
		total += rowEventCount(r)
	}
	return total
}

// rowFirstEvent returns the id of history row r's first event.
func rowFirstEvent(r item) (uint64, error) {
	sk, _, err := strAttr(r, attrSK)
	if err != nil {
		return 0, err
	}
	_, id, err := keys.ParseHistorySK(sk)
	return id, err
}

// eventIDs are a history's event ids as runs of consecutive ids.
type eventIDs []struct{ from, to uint64 }

// idsOf returns the ids of events, which are in history order.
func idsOf(events []provider.Event) eventIDs {
	var ids eventIDs
	for _, e := range events {
		if n := len(ids); n > 0 && e.EventID == ids[n-1].to+1 {
			ids[n-1].to = e.EventID
			continue
		}
		ids = append(ids, struct{ from, to uint64 }{e.EventID, e.EventID})
	}
	return ids
}

// has reports whether id is among ids.
func (ids eventIDs) has(id uint64) bool {
	for _, r := range ids {
		if id >= r.from && id <= r.to {
			return true
		}
	}
	return false
}

// checkNewEvents fails with [provider.ErrDuplicateEvent] when a turn's
// event reuses an id of the history its fetch read: a put conditioned on a
// new key catches only a row's first id.
func (t *turnState) checkNewEvents(executionID uint64, events []encodedEvent) error {
	if t.histIDs == nil || t.histEnd == nil || t.histEnd.exec != executionID {
		return nil
	}
	for _, e := range events {
		if t.histIDs.has(e.id) {
			return provider.Permanent(provider.OpAckOrchestrationItem, provider.ErrDuplicateEvent,
				"event_id %d already exists in execution %d of instance %s", e.id, executionID, t.st.id)
		}
	}
	return nil
}
