package billing

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// maxBatchGetKeys is the most keys one BatchGetItem request may ask for.
const maxBatchGetKeys = 100

// minBackoff and maxBackoff bound the wait before asking again for keys a
// BatchGetItem left unprocessed.
const (
	minBackoff = 10 * time.Millisecond
	maxBackoff = time.Second
)

// shadowGet reads the item with the given key, strongly consistent, through
// the shadow client; it returns nil for an absent item.
func (m *Meter) shadowGet(ctx context.Context, table *string, key map[string]types.AttributeValue) (map[string]types.AttributeValue, error) {
	sctx, cancel := shadowContext(ctx)
	defer cancel()
	out, err := m.shadow.GetItem(sctx, &dynamodb.GetItemInput{TableName: table, Key: key, ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get item from %s: %w", deref(table), err)
	}
	return out.Item, nil
}

// itemRef names one item: its table, the table's schema and its key.
type itemRef struct {
	table  string
	schema *tableSchema
	key    map[string]types.AttributeValue
}

// images maps table name and key string to an item image; an absent item
// has no entry.
type images map[string]map[string]map[string]types.AttributeValue

func (im images) get(r itemRef) map[string]types.AttributeValue {
	ks, ok := r.schema.keyString(r.key)
	if !ok {
		return nil
	}
	return im[r.table][ks]
}

// shadowBatchGet reads the referenced items, strongly consistent, through
// the shadow client with BatchGetItem, 100 keys a request, until no key is
// left unprocessed.
func (m *Meter) shadowBatchGet(ctx context.Context, refs []itemRef) (images, error) {
	im := images{}
	schemas := map[string]*tableSchema{}
	var pending []itemRef
	seen := map[string]bool{}
	for _, r := range refs {
		ks, ok := r.schema.keyString(r.key)
		if !ok || seen[r.table+"\x00"+ks] {
			continue
		}
		seen[r.table+"\x00"+ks] = true
		schemas[r.table] = r.schema
		pending = append(pending, r)
	}
	sctx, cancel := shadowContext(ctx)
	defer cancel()
	backoff := minBackoff
	for len(pending) > 0 {
		n := min(len(pending), maxBatchGetKeys)
		req := map[string]types.KeysAndAttributes{}
		for _, r := range pending[:n] {
			ka := req[r.table]
			ka.Keys = append(ka.Keys, r.key)
			ka.ConsistentRead = aws.Bool(true)
			req[r.table] = ka
		}
		pending = pending[n:]
		for len(req) > 0 {
			out, err := m.shadow.BatchGetItem(sctx, &dynamodb.BatchGetItemInput{RequestItems: req})
			if err != nil {
				return nil, fmt.Errorf("batch get items: %w", err)
			}
			for table, items := range out.Responses {
				for _, item := range items {
					ks, ok := schemas[table].keyString(item)
					if !ok {
						continue
					}
					if im[table] == nil {
						im[table] = map[string]map[string]types.AttributeValue{}
					}
					im[table][ks] = item
				}
			}
			req = out.UnprocessedKeys
			if len(req) > 0 {
				// DynamoDB leaves keys unprocessed when throttled: back off.
				select {
				case <-sctx.Done():
					return nil, fmt.Errorf("batch get items: %w", sctx.Err())
				case <-time.After(backoff):
				}
				backoff = min(2*backoff, maxBackoff)
			}
		}
	}
	return im, nil
}
