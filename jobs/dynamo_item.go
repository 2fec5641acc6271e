package jobs

import (
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/duradyn/duradyn/tables"
)

// Attributes of a job's item besides its fields, which are named by
// attrOf.
const (
	// attrWriteID holds the id of the last create or compare-and-swap that
	// wrote the item.
	attrWriteID = "wid"
	// attrMetadata holds the job's metadata, a map of strings.
	attrMetadata = "M"
)

// attrOf returns the attribute that holds field: its JSON name, except for
// metadata.
func attrOf(field Field) string {
	if field == FieldMetadata {
		return attrMetadata
	}
	return string(field)
}

// jobKey returns the table key of the job with id.
func jobKey(id string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		tables.AttrPK: &types.AttributeValueMemberS{Value: jobPK(id)},
		tables.AttrSK: &types.AttributeValueMemberS{Value: jobSK},
	}
}

// jobItem returns the item of a normalised job in shard, written by the
// write with id writeID.
func jobItem(job Job, shard int, writeID string) map[string]types.AttributeValue {
	item := jobKey(job.ID)
	item[tables.AttrInstancesPK] = &types.AttributeValueMemberS{Value: jobIndexPK(shard)}
	item[tables.AttrInstancesSK] = &types.AttributeValueMemberS{Value: jobIndexSK(job.ID, job.NextRunTime)}
	item[attrWriteID] = &types.AttributeValueMemberS{Value: writeID}
	for field, value := range fieldsOf(job) {
		if av := attrValue(field, value); av != nil {
			item[attrOf(field)] = av
		}
	}
	return item
}

// fieldsOf returns every field of job as the normalised values of a
// [Changes].
func fieldsOf(job Job) Changes {
	return Changes{
		FieldStatus:                  job.Status,
		FieldNextRunTime:             timeChange(job.NextRunTime),
		FieldIfMissed:                job.IfMissed,
		FieldMisfireThresholdSeconds: job.MisfireThresholdSeconds,
		FieldLastRunTime:             timeChange(job.LastRunTime),
		FieldLastScheduledTime:       timeChange(job.LastScheduledTime),
		FieldMetadata:                job.Metadata,
		FieldName:                    job.Name,
		FieldTriggerType:             job.TriggerType,
		FieldTriggerArgs:             job.TriggerArgs,
	}
}

func timeChange(t *time.Time) any {
	if t == nil {
		return nil
	}
	return *t
}

// attrValue returns the attribute value that holds a normalised field
// value, or nil when the value is stored as an absent attribute (nil
// times, empty metadata, name, trigger type and arguments).
func attrValue(field Field, value any) types.AttributeValue {
	switch v := value.(type) {
	case Status:
		return &types.AttributeValueMemberS{Value: string(v)}
	case IfMissed:
		return &types.AttributeValueMemberS{Value: string(v)}
	case int:
		return &types.AttributeValueMemberN{Value: strconv.Itoa(v)}
	case time.Time:
		return &types.AttributeValueMemberN{Value: strconv.FormatInt(v.UnixMilli(), 10)}
	case map[string]string:
		if len(v) == 0 {
			return nil
		}
		m := make(map[string]types.AttributeValue, len(v))
		for key, s := range v {
			m[key] = &types.AttributeValueMemberS{Value: s}
		}
		return &types.AttributeValueMemberM{Value: m}
	case string:
		if v == "" {
			return nil
		}
		return &types.AttributeValueMemberS{Value: v}
	case json.RawMessage:
		if len(v) == 0 {
			return nil
		}
		return &types.AttributeValueMemberS{Value: string(v)}
	}
	return nil
}

// jobFromItem decodes a job's item.
func jobFromItem(item map[string]types.AttributeValue) (Job, error) {
	pk, err := stringAttr(item, tables.AttrPK)
	if err != nil {
		return Job{}, err
	}
	id, err := jobIDFromPK(pk)
	if err != nil {
		return Job{}, err
	}
	job := Job{ID: id}
	status, err := stringAttr(item, attrOf(FieldStatus))
	if err != nil {
		return Job{}, fmt.Errorf("jobs: item of job %q: %w", id, err)
	}
	job.Status = Status(status)
	policy, err := stringAttr(item, attrOf(FieldIfMissed))
	if err != nil {
		return Job{}, fmt.Errorf("jobs: item of job %q: %w", id, err)
	}
	job.IfMissed = IfMissed(policy)
	threshold, err := numberAttr(item, attrOf(FieldMisfireThresholdSeconds))
	if err != nil {
		return Job{}, fmt.Errorf("jobs: item of job %q: %w", id, err)
	}
	job.MisfireThresholdSeconds = int(threshold)
	for _, f := range []struct {
		field Field
		to    **time.Time
	}{
		{FieldNextRunTime, &job.NextRunTime},
		{FieldLastRunTime, &job.LastRunTime},
		{FieldLastScheduledTime, &job.LastScheduledTime},
	} {
		if _, ok := item[attrOf(f.field)]; !ok {
			continue
		}
		ms, err := numberAttr(item, attrOf(f.field))
		if err != nil {
			return Job{}, fmt.Errorf("jobs: item of job %q: %w", id, err)
		}
		t := fromMillis(ms)
		*f.to = &t
	}
	if av, ok := item[attrMetadata]; ok {
		m, ok := av.(*types.AttributeValueMemberM)
		if !ok {
			return Job{}, fmt.Errorf("jobs: item of job %q: attribute %s is not a map", id, attrMetadata)
		}
		job.Metadata = make(map[string]string, len(m.Value))
		for key := range m.Value {
			if job.Metadata[key], err = stringAttr(m.Value, key); err != nil {
				return Job{}, fmt.Errorf("jobs: item of job %q: metadata: %w", id, err)
			}
		}
		job.Metadata = copyMetadata(job.Metadata)
	}
	for _, f := range []struct {
		field Field
		to    *string
	}{
		{FieldName, &job.Name},
		{FieldTriggerType, &job.TriggerType},
	} {
		if _, ok := item[attrOf(f.field)]; ok {
			if *f.to, err = stringAttr(item, attrOf(f.field)); err != nil {
				return Job{}, fmt.Errorf("jobs: item of job %q: %w", id, err)
			}
		}
	}
	if _, ok := item[attrOf(FieldTriggerArgs)]; ok {
		args, err := stringAttr(item, attrOf(FieldTriggerArgs))
		if err != nil {
			return Job{}, fmt.Errorf("jobs: item of job %q: %w", id, err)
		}
		job.TriggerArgs = json.RawMessage(args)
	}
	return job, nil
}

// writeIDOf returns the write id an item holds ("" for none).
func writeIDOf(item map[string]types.AttributeValue) string {
	if av, ok := item[attrWriteID].(*types.AttributeValueMemberS); ok {
		return av.Value
	}
	return ""
}

func stringAttr(item map[string]types.AttributeValue, name string) (string, error) {
	av, ok := item[name].(*types.AttributeValueMemberS)
	if !ok {
		return "", fmt.Errorf("attribute %s is missing or not a string", name)
	}
	return av.Value, nil
}

func numberAttr(item map[string]types.AttributeValue, name string) (int64, error) {
	av, ok := item[name].(*types.AttributeValueMemberN)
	if !ok {
		return 0, fmt.Errorf("attribute %s is missing or not a number", name)
	}
	n, err := strconv.ParseInt(av.Value, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("attribute %s: %w", name, err)
	}
	return n, nil
}
