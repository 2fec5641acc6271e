package provider

import (
	"context"
	"time"
)

// DefaultInstancePageSize is the page size of an [InstanceQuery] whose
// PageSize is 0, and MaxInstancePageSize the largest page one may ask for.
const (
	DefaultInstancePageSize = 50
	MaxInstancePageSize     = 1000
)

// InstanceQuery selects one page of instances, newest first (by creation
// time, then id). Criteria are ANDed.
type InstanceQuery struct {
	// Statuses, when not empty, keeps the instances whose current
	// execution has one of these stored statuses ([StatusRunning], ...).
	Statuses []string
	// IDPrefix, when not empty, keeps the instances whose id starts with
	// it.
	IDPrefix string
	// CreatedFrom and CreatedTo, when not zero, keep the instances created
	// at or after CreatedFrom and before CreatedTo.
	CreatedFrom, CreatedTo time.Time
	// Match, when not nil, is asked about each instance that the criteria
	// above keep, once its record is read, and keeps it when it reports
	// true (an orchestration name, say, which listings do not index).
	// Ignored with IndexOnly.
	Match func(*InstanceListing) bool
	// IndexOnly lists what the store's listing holds without reading each
	// instance's record: InstanceID, Status, ParentInstanceID, CreatedAt
	// and CompletedAt are set, nothing else.
	IndexOnly bool
	// PageSize is the most instances the page holds; 0 means
	// [DefaultInstancePageSize]; at most [MaxInstancePageSize].
	PageSize int
	// MaxExamined bounds the listing entries one call examines; 0 means 20
	// times the page size. A page that reaches it before it is full ends
	// early, with a NextPageToken, so a selective filter over a large
	// store answers within a bounded cost.
	MaxExamined int
	// PageToken continues the listing after the page that returned it;
	// "" starts at the newest instance.
	PageToken string
}

// InstanceListing is one instance of an [InstancePage].
type InstanceListing struct {
	InstanceInfo
	// CompletedAt is when the current execution ended, epoch milliseconds;
	// 0 while it runs or when the store does not track it.
	CompletedAt uint64
}

// InstancePage is one page of a listing.
type InstancePage struct {
	// Instances are the page's instances, newest first.
	Instances []InstanceListing
	// NextPageToken continues the listing; "" when it has ended.
	NextPageToken string
	// Examined counts the listing entries the call examined, matching or
	// not.
	Examined int
}

// InstancePager is implemented by stores that list instances a page at a
// time, at a cost bounded by the page rather than by the store. It is
// optional: callers fall back to [Admin.ListInstances].
type InstancePager interface {
	// ListInstancesPage returns one page of the instances q selects.
	ListInstancesPage(ctx context.Context, q InstanceQuery) (InstancePage, error)
}

// EffectivePageSize returns PageSize, bounded to [1, MaxInstancePageSize],
// or DefaultInstancePageSize when it is 0 or less.
func (q InstanceQuery) EffectivePageSize() int {
	if q.PageSize <= 0 {
		return DefaultInstancePageSize
	}
	return min(q.PageSize, MaxInstancePageSize)
}

// EffectiveMaxExamined returns MaxExamined, or 20 times the page size when
// it is 0 or less.
func (q InstanceQuery) EffectiveMaxExamined() int {
	if q.MaxExamined <= 0 {
		return 20 * q.EffectivePageSize()
	}
	return q.MaxExamined
}
