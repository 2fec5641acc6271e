// Package itemsize computes the size of a DynamoDB item as DynamoDB
// computes it, both for the 400 KB item limit and for billing: [ItemSize]
// of an item, [AttributeSize] of one value.
//
// The rules are those of "DynamoDB item sizes and formats"
// (https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/CapacityUnitCalculations.html),
// with the exact rule for numbers that the page only approximates. The
// package's tests check every rule byte for byte against DynamoDB Local.
package itemsize
