package tables

// Attribute and index names of the duradyn table. Every package that reads or
// writes the table, and every check of the infrastructure code against it,
// refers to these constants rather than to string literals.
//
// All key attributes, on the table and on its indexes, hold strings (type S).
// Several names are DynamoDB reserved words (status, for one): expressions must
// refer to attributes through placeholders, which the SDK's expression package
// does for every name.
const (
	// AttrPK is the table's partition key attribute.
	AttrPK = "pk"
	// AttrSK is the table's sort key attribute.
	AttrSK = "sk"

	// IndexReady is the sparse global secondary index a dispatcher queries for
	// queue rows that may be fetched. See the package documentation.
	IndexReady = "ready"
	// AttrReadyPK is the partition key attribute of [IndexReady].
	AttrReadyPK = "rq_pk"
	// AttrReadySK is the sort key attribute of [IndexReady].
	AttrReadySK = "rq_sk"

	// AttrVis is a queue-row attribute projected into [IndexReady]: the
	// visibility a dispatcher filters on before it reads the base table.
	AttrVis = "vis"
	// AttrLockUntil is a queue-row attribute projected into [IndexReady]: the
	// end of the current lock, which a dispatcher filters on.
	AttrLockUntil = "lock_until"
	// AttrTag is a queue-row attribute projected into [IndexReady]: the tag a
	// dispatcher filters on.
	AttrTag = "tag"
	// AttrSession is a queue-row attribute projected into [IndexReady]: the
	// session a dispatcher filters on.
	AttrSession = "session"
	// AttrItem is the queue-row attribute that holds the queued work item's
	// JSON. It is not projected into [IndexReady] (tables made by earlier
	// versions of this package project it, which costs more and is
	// otherwise harmless): every write of a queue row would pay for it
	// again in the index, and a worker takes the activity from its claim's
	// returned values instead.
	AttrItem = "item"
	// AttrAttempts is a queue-row attribute projected into [IndexReady]:
	// the worker row's attempt count before the lock a worker is taking.
	AttrAttempts = "att"

	// IndexInstances is the sparse global secondary index that lists
	// orchestration instances. See the package documentation.
	IndexInstances = "instances"
	// AttrInstancesPK is the partition key attribute of [IndexInstances].
	AttrInstancesPK = "li_pk"
	// AttrInstancesSK is the sort key attribute of [IndexInstances].
	AttrInstancesSK = "li_sk"

	// AttrStatus is an instance-metadata attribute projected into
	// [IndexInstances]. It is a DynamoDB reserved word.
	AttrStatus = "status"
	// AttrParent is an instance-metadata attribute projected into
	// [IndexInstances].
	AttrParent = "parent"
	// AttrCompletedAt is an instance-metadata attribute projected into
	// [IndexInstances].
	AttrCompletedAt = "completed_at"

	// AttrExpiresAt is the table's time-to-live attribute: a number holding
	// epoch seconds, after which DynamoDB may delete the item. Only
	// housekeeping rows carry it.
	AttrExpiresAt = "expires_at"
)
