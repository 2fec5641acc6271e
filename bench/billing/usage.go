package billing

import (
	"maps"
	"time"
)

// Usage is what a [Meter] counted: requests per operation and the request
// units and billed requests they cost by DynamoDB's and SQS's billing rules.
// The zero Usage is empty and ready to use.
type Usage struct {
	// DynamoDB counts DynamoDB requests by operation name (GetItem, Query,
	// TransactWriteItems, DescribeTable, ...).
	DynamoDB map[string]int
	// WRU and RRU are the write and read request units the DynamoDB requests
	// cost by DynamoDB's on-demand billing rules (see the package
	// documentation).
	WRU, RRU float64
	// SQS counts SQS API requests by operation name (SendMessage,
	// ReceiveMessage, ...).
	SQS map[string]int
	// SQSBilled is the number of requests SQS bills for them: one per API
	// request and 64 KB chunk of its payload.
	SQSBilled int
	// WRUByItem is WRU by the class [Meter.ClassifyItems] gives the item
	// written, its index writes under the class followed by " in " and the
	// index's name; nil when the meter classifies nothing.
	WRUByItem map[string]float64
	// DynamoDBTime and SQSTime are the time the requests of each operation
	// took, from being sent until their response (SDK retries included;
	// the meter's own reads of item images not).
	DynamoDBTime, SQSTime map[string]time.Duration
}

// Sub returns u - v, for measuring an interval: take a [Meter.Usage]
// snapshot before and after, and subtract. Operations whose difference is
// zero are left out of the maps.
func (u Usage) Sub(v Usage) Usage {
	return Usage{
		DynamoDB:     subCounts(u.DynamoDB, v.DynamoDB),
		WRU:          u.WRU - v.WRU,
		RRU:          u.RRU - v.RRU,
		SQS:          subCounts(u.SQS, v.SQS),
		SQSBilled:    u.SQSBilled - v.SQSBilled,
		WRUByItem:    subCounts(u.WRUByItem, v.WRUByItem),
		DynamoDBTime: subCounts(u.DynamoDBTime, v.DynamoDBTime),
		SQSTime:      subCounts(u.SQSTime, v.SQSTime),
	}
}

func subCounts[N int | float64 | time.Duration](a, b map[string]N) map[string]N {
	d := maps.Clone(a)
	for op, n := range b {
		if d == nil {
			d = map[string]N{}
		}
		d[op] -= n
	}
	maps.DeleteFunc(d, func(_ string, n N) bool { return n == 0 })
	return d
}

// MeanTime returns the mean time of a request of operation op, of
// DynamoDB's (dynamoDB true) or SQS's, and false when u counts none.
func (u Usage) MeanTime(dynamoDB bool, op string) (time.Duration, bool) {
	counts, times := u.SQS, u.SQSTime
	if dynamoDB {
		counts, times = u.DynamoDB, u.DynamoDBTime
	}
	n := counts[op]
	if n == 0 {
		return 0, false
	}
	return times[op] / time.Duration(n), true
}

// DynamoDBRequests is the number of DynamoDB requests of all operations.
func (u Usage) DynamoDBRequests() int { return sum(u.DynamoDB) }

// SQSRequests is the number of SQS API requests of all operations (not the
// billed requests: see SQSBilled).
func (u Usage) SQSRequests() int { return sum(u.SQS) }

func sum(m map[string]int) int {
	total := 0
	for _, n := range m {
		total += n
	}
	return total
}

// Dollars is what u costs at the list prices in this package: write and
// read request units at the DynamoDB on-demand prices, and billed SQS
// requests at the standard-queue price. Storage, data transfer and free
// tiers are not counted.
func (u Usage) Dollars() float64 {
	return u.WRU*DynamoDBWriteRequestUnitPrice +
		u.RRU*DynamoDBReadRequestUnitPrice +
		float64(u.SQSBilled)*SQSRequestPrice
}

// ProvisionedDollars is what u costs on a table in provisioned-capacity
// mode whose capacity is consumed at the given utilization, in (0, 1]:
// each request unit is a capacity unit for a second, paid at the hourly
// price over 3,600 and over utilization; SQS as in [Usage.Dollars]. It
// prices a steady workload under auto scaling
// ([AutoScalingTargetUtilization]); the minimum capacity an idle table
// keeps, and the throttling of a burst above the capacity, are not in it.
func (u Usage) ProvisionedDollars(utilization float64) float64 {
	perSecond := func(hourPrice float64) float64 { return hourPrice / 3600 / utilization }
	return u.WRU*perSecond(DynamoDBWriteCapacityUnitHourPrice) +
		u.RRU*perSecond(DynamoDBReadCapacityUnitHourPrice) +
		float64(u.SQSBilled)*SQSRequestPrice
}

// clone returns a deep copy of u.
func (u Usage) clone() Usage {
	u.DynamoDB = maps.Clone(u.DynamoDB)
	u.SQS = maps.Clone(u.SQS)
	u.DynamoDBTime = maps.Clone(u.DynamoDBTime)
	u.SQSTime = maps.Clone(u.SQSTime)
	u.WRUByItem = maps.Clone(u.WRUByItem)
	return u
}
