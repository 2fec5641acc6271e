package billing

// Unit sizes of DynamoDB's billing. DynamoDB counts 1 KB as 1,024 bytes
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/Constraints.html).
// Item sizes are itemsize.ItemSize's: the rules of "DynamoDB item sizes and
// formats".
const (
	// writeUnitBytes is what one write request unit writes: 1 KB.
	writeUnitBytes = 1024
	// readUnitBytes is what one strongly consistent read request unit
	// reads: 4 KB.
	readUnitBytes = 4096
)

// writeUnits is the write request units of a standard write of size bytes:
// 1 per KB, rounded up, and at least 1 (a write of an absent item, or of an
// empty one, still costs a unit).
func writeUnits(size int) float64 {
	return float64(max(1, ceilDiv(size, writeUnitBytes)))
}

// readUnits is the read request units of a strongly consistent read of size
// bytes: 1 per 4 KB, rounded up, and at least 1.
func readUnits(size int) float64 {
	return float64(max(1, ceilDiv(size, readUnitBytes)))
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
