package billing

// List prices used by [Usage.Dollars]: US East (N. Virginia), us-east-1,
// checked on 2026-11-23 against the AWS pricing pages named below. They are
// the first paid tier; free tiers (the first 1 million SQS requests a
// month, for one) are left out, so that a figure scales with the work
// measured.
const (
	// DynamoDBWriteRequestUnitPrice is the on-demand price of one write
	// request unit in dollars: $0.625 per million, the price since the
	// on-demand price reduction of November 2024
	// (https://aws.amazon.com/dynamodb/pricing/on-demand/).
	DynamoDBWriteRequestUnitPrice = 0.625 / 1e6
	// DynamoDBReadRequestUnitPrice is the on-demand price of one read
	// request unit in dollars: $0.125 per million, since the same reduction
	// (https://aws.amazon.com/dynamodb/pricing/on-demand/).
	DynamoDBReadRequestUnitPrice = 0.125 / 1e6
	// DynamoDBWriteCapacityUnitHourPrice is the provisioned-capacity price
	// of one write capacity unit for an hour in dollars: $0.00065. A WCU
	// serves one write request unit a second, so an hour of it serves
	// 3,600 (https://aws.amazon.com/dynamodb/pricing/provisioned/).
	DynamoDBWriteCapacityUnitHourPrice = 0.00065
	// DynamoDBReadCapacityUnitHourPrice is the provisioned-capacity price
	// of one read capacity unit for an hour in dollars: $0.00013, serving
	// one read request unit a second (the same page).
	DynamoDBReadCapacityUnitHourPrice = 0.00013
	// AutoScalingTargetUtilization is the share of its provisioned
	// capacity a table consumes under DynamoDB auto scaling at its default
	// target: 70%. Capacity is paid whether consumed or not, so a unit
	// consumed costs the hourly price over 3,600 seconds over this share.
	AutoScalingTargetUtilization = 0.70
	// SQSRequestPrice is the price of one billed request to a standard SQS
	// queue in dollars: $0.40 per million, the tier from 1 million to 100
	// billion requests a month (https://aws.amazon.com/sqs/pricing/).
	SQSRequestPrice = 0.40 / 1e6
)
