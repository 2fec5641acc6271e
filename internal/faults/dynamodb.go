package faults

import (
	"context"
	"maps"
	"slices"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// DynamoDB returns a client that sends requests through api, applying the
// injector's rules, real conflicts and index lag, above the SDK's retryer:
// every injected fault reaches the caller. Wrap each process's client
// separately with one shared injector.
func (in *Injector) DynamoDB(api DynamoDB) DynamoDB {
	return &dynamoClient{in: in, api: api}
}

// dynamoClient is the wrapper [Injector.DynamoDB] returns.
type dynamoClient struct {
	in  *Injector
	api DynamoDB
}

func (d *dynamoClient) GetItem(ctx context.Context, params *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	return run(ctx, d.in, call[*dynamodb.GetItemOutput]{
		op: OpGetItem, input: params,
		send: func(ctx context.Context, _ bool, _ Fault) (*dynamodb.GetItemOutput, error) {
			return d.api.GetItem(ctx, params, optFns...)
		},
	})
}

func (d *dynamoClient) PutItem(ctx context.Context, params *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	return run(ctx, d.in, call[*dynamodb.PutItemOutput]{
		op: OpPutItem, input: params,
		admit: func() (func(), error) { return d.in.admitWrite(OpPutItem, d.in.itemKey(params.TableName, params.Item)) },
		send: func(ctx context.Context, _ bool, _ Fault) (*dynamodb.PutItemOutput, error) {
			return d.api.PutItem(ctx, params, optFns...)
		},
	})
}

func (d *dynamoClient) UpdateItem(ctx context.Context, params *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	return run(ctx, d.in, call[*dynamodb.UpdateItemOutput]{
		op: OpUpdateItem, input: params,
		admit: func() (func(), error) {
			return d.in.admitWrite(OpUpdateItem, d.in.itemKey(params.TableName, params.Key))
		},
		send: func(ctx context.Context, _ bool, _ Fault) (*dynamodb.UpdateItemOutput, error) {
			return d.api.UpdateItem(ctx, params, optFns...)
		},
	})
}

func (d *dynamoClient) DeleteItem(ctx context.Context, params *dynamodb.DeleteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	return run(ctx, d.in, call[*dynamodb.DeleteItemOutput]{
		op: OpDeleteItem, input: params,
		admit: func() (func(), error) {
			return d.in.admitWrite(OpDeleteItem, d.in.itemKey(params.TableName, params.Key))
		},
		send: func(ctx context.Context, _ bool, _ Fault) (*dynamodb.DeleteItemOutput, error) {
			return d.api.DeleteItem(ctx, params, optFns...)
		},
	})
}

func (d *dynamoClient) Query(ctx context.Context, params *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return run(ctx, d.in, call[*dynamodb.QueryOutput]{
		op: OpQuery, input: params,
		send: func(ctx context.Context, active bool, _ Fault) (*dynamodb.QueryOutput, error) {
			if active {
				if lag, ok := d.in.lagOf(params.IndexName); ok {
					return d.in.laggedQuery(ctx, d.api, params, lag, optFns)
				}
			}
			return d.api.Query(ctx, params, optFns...)
		},
	})
}

func (d *dynamoClient) Scan(ctx context.Context, params *dynamodb.ScanInput, optFns ...func(*dynamodb.Options)) (*dynamodb.ScanOutput, error) {
	return run(ctx, d.in, call[*dynamodb.ScanOutput]{
		op: OpScan, input: params,
		send: func(ctx context.Context, active bool, _ Fault) (*dynamodb.ScanOutput, error) {
			if active {
				if lag, ok := d.in.lagOf(params.IndexName); ok {
					return d.in.laggedScan(ctx, d.api, params, lag, optFns)
				}
			}
			return d.api.Scan(ctx, params, optFns...)
		},
	})
}

func (d *dynamoClient) TransactWriteItems(ctx context.Context, params *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	return run(ctx, d.in, call[*dynamodb.TransactWriteItemsOutput]{
		op: OpTransactWriteItems, input: params,
		admit: func() (func(), error) { return d.in.admitTransaction(d.in.transactionKeys(params)) },
		send: func(ctx context.Context, _ bool, _ Fault) (*dynamodb.TransactWriteItemsOutput, error) {
			return d.api.TransactWriteItems(ctx, params, optFns...)
		},
	})
}

func (d *dynamoClient) BatchWriteItem(ctx context.Context, params *dynamodb.BatchWriteItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	// Writes refused for real conflicts are left out of the request and
	// returned as unprocessed.
	var refused map[string][]types.WriteRequest
	return run(ctx, d.in, call[*dynamodb.BatchWriteItemOutput]{
		op: OpBatchWriteItem, input: params,
		admit: func() (func(), error) {
			var keys []string
			var entries []batchEntry
			for _, table := range slices.Sorted(maps.Keys(params.RequestItems)) {
				for _, w := range params.RequestItems[table] {
					var it item
					switch {
					case w.PutRequest != nil:
						it = w.PutRequest.Item
					case w.DeleteRequest != nil:
						it = w.DeleteRequest.Key
					}
					keys = append(keys, d.in.itemKey(&table, it))
					entries = append(entries, batchEntry{table, w})
				}
			}
			done, no := d.in.admitBatch(keys)
			for i, e := range entries {
				if no[i] {
					if refused == nil {
						refused = map[string][]types.WriteRequest{}
					}
					refused[e.table] = append(refused[e.table], e.w)
				}
			}
			return done, nil
		},
		send: func(ctx context.Context, _ bool, _ Fault) (*dynamodb.BatchWriteItemOutput, error) {
			if refused == nil {
				return d.api.BatchWriteItem(ctx, params, optFns...)
			}
			return d.batchWithout(ctx, params, refused, optFns)
		},
	})
}

// batchEntry is one write of a BatchWriteItem and its table.
type batchEntry struct {
	table string
	w     types.WriteRequest
}

// batchWithout sends params without the writes refused, and reports those
// as unprocessed along with what the service leaves unprocessed.
func (d *dynamoClient) batchWithout(ctx context.Context, params *dynamodb.BatchWriteItemInput, refused map[string][]types.WriteRequest, optFns []func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	rest := map[string][]types.WriteRequest{}
	for table, ws := range params.RequestItems {
		for _, w := range ws {
			if !containsWrite(refused[table], w) {
				rest[table] = append(rest[table], w)
			}
		}
	}
	out := &dynamodb.BatchWriteItemOutput{}
	if len(rest) > 0 {
		reduced := *params
		reduced.RequestItems = rest
		var err error
		if out, err = d.api.BatchWriteItem(ctx, &reduced, optFns...); err != nil {
			return nil, err
		}
	}
	unprocessed := maps.Clone(out.UnprocessedItems)
	if unprocessed == nil {
		unprocessed = map[string][]types.WriteRequest{}
	}
	for table, ws := range refused {
		unprocessed[table] = append(unprocessed[table], ws...)
	}
	out.UnprocessedItems = unprocessed
	return out, nil
}

// containsWrite reports whether ws holds w itself (the same request
// structures, not an equal copy).
func containsWrite(ws []types.WriteRequest, w types.WriteRequest) bool {
	for _, x := range ws {
		if x.PutRequest == w.PutRequest && x.DeleteRequest == w.DeleteRequest {
			return true
		}
	}
	return false
}
