package dynamotest

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/dynamo/internal/keys"
	"github.com/duradyn/duradyn/provider"
)

// ScanMetrics computes what SystemMetrics must report from a consistent
// Scan of the whole table (small test tables only), without the counter
// cells. The provider counts a running execution's events as of its first
// turn, so events agree only when no running execution has had a later one.
func (env *Env) ScanMetrics(ctx context.Context) (provider.SystemMetrics, error) {
	var m provider.SystemMetrics
	type instance struct {
		status   string
		found    bool
		canceled bool
		pruning  map[uint64]bool
		execs    uint64
		events   map[uint64]uint64
	}
	all := map[string]*instance{}
	get := func(pk string) *instance {
		in := all[pk]
		if in == nil {
			in = &instance{pruning: map[uint64]bool{}, events: map[uint64]uint64{}}
			all[pk] = in
		}
		return in
	}
	var start map[string]types.AttributeValue
	for {
		out, err := env.DB.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(env.Table), ConsistentRead: aws.Bool(true), ExclusiveStartKey: start})
		if err != nil {
			return m, err
		}
		for _, row := range out.Items {
			pk := strAttr(row, "pk")
			if !strings.HasPrefix(pk, keys.InstancePrefix) {
				continue
			}
			sk := strAttr(row, "sk")
			in := get(pk)
			switch {
			case strings.HasPrefix(sk, keys.QueuePrefix):
				if strAttr(row, "kind") == provider.KindStartOrchestration {
					m.PendingInstances++
				}
			case sk == keys.Meta:
				in.found, in.status = true, strAttr(row, "status")
				_, in.canceled = row["xcan"]
			case strings.HasPrefix(sk, keys.ExecPrefix):
				id, err := keys.ParseNum20(sk[len(keys.ExecPrefix):])
				if err != nil {
					return m, err
				}
				if _, ok := row["pruning"]; ok {
					in.pruning[id] = true
				} else {
					in.execs++
				}
			case strings.HasPrefix(sk, keys.HistPrefix) && !keys.IsTurnMarkSK(sk):
				id, _, err := keys.ParseHistorySK(sk)
				if err != nil {
					return m, err
				}
				in.events[id] += rowEvents(row)
			}
		}
		if len(out.LastEvaluatedKey) == 0 {
			break
		}
		start = out.LastEvaluatedKey
	}
	for _, in := range all {
		if !in.found {
			continue
		}
		m.CountInstance(in.status)
		if in.canceled && in.status == provider.StatusFailed {
			m.CanceledInstances++
		}
		m.TotalExecutions += in.execs
		for id, n := range in.events {
			if !in.pruning[id] {
				m.TotalEvents += n
			}
		}
	}
	return m, nil
}

// rowEvents is the number of events a history row holds.
func rowEvents(row map[string]types.AttributeValue) uint64 {
	if l, ok := row["evs"].(*types.AttributeValueMemberL); ok {
		return uint64(len(l.Value))
	}
	if n, ok := row["nev"].(*types.AttributeValueMemberN); ok {
		if v, err := strconv.ParseUint(n.Value, 10, 64); err == nil && v > 0 {
			return v
		}
	}
	return 1
}

func strAttr(row map[string]types.AttributeValue, name string) string {
	if v, ok := row[name].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

// CheckMetrics describes how p's SystemMetrics differs from ScanMetrics
// ("" when they agree); see ScanMetrics for when to call it.
func (env *Env) CheckMetrics(ctx context.Context, p provider.Admin) (string, error) {
	got, err := p.SystemMetrics(ctx)
	if err != nil {
		return "", fmt.Errorf("SystemMetrics: %w", err)
	}
	want, err := env.ScanMetrics(ctx)
	if err != nil {
		return "", fmt.Errorf("scan the table: %w", err)
	}
	if got != want {
		return fmt.Sprintf("SystemMetrics = %+v; the table holds %+v", got, want), nil
	}
	return env.negativeCells(ctx)
}

// negativeCells describes the counter-cell figures whose sum is below
// zero: SystemMetrics reports such a figure as 0, so a change applied
// twice would otherwise pass for a table that holds nothing.
func (env *Env) negativeCells(ctx context.Context) (string, error) {
	out, err := env.DB.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(env.Table),
		KeyConditionExpression:    aws.String("pk = :pk"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":pk": &types.AttributeValueMemberS{Value: keys.MetricsPK}},
		ConsistentRead:            aws.Bool(true),
	})
	if err != nil {
		return "", fmt.Errorf("query the counter cells: %w", err)
	}
	sums := map[string]int64{}
	for _, row := range out.Items {
		for name, v := range row {
			if n, ok := v.(*types.AttributeValueMemberN); ok {
				x, err := strconv.ParseInt(n.Value, 10, 64)
				if err != nil {
					return "", fmt.Errorf("counter cell %s = %q: %w", name, n.Value, err)
				}
				sums[name] += x
			}
		}
	}
	var neg []string
	for name, sum := range sums {
		if sum < 0 {
			neg = append(neg, fmt.Sprintf("%s = %d", name, sum))
		}
	}
	if len(neg) > 0 {
		slices.Sort(neg)
		return "counter cells sum below zero: " + strings.Join(neg, ", "), nil
	}
	return "", nil
}
