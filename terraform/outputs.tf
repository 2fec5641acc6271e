################################################################################
# Table
################################################################################

output "table_name" {
  description = "Name of the DynamoDB table."
  value       = try(local.table.name, null)
}

output "table_arn" {
  description = "ARN of the DynamoDB table."
  value       = local.table_arn
}

output "table_index_arns" {
  description = "ARNs of the table's global secondary indexes, keyed by index name (ready, instances)."
  value       = try({ for ix in local.schema.global_secondary_indexes : ix.name => "${local.table.arn}/index/${ix.name}" }, null)
}

output "region" {
  description = "AWS region of the table and queues."
  value       = local.region
}

################################################################################
# Signal queues
################################################################################

output "orchestrator_queue_url" {
  description = "URL of the SQS queue carrying orchestrator wake-up signals."
  value       = try(aws_sqs_queue.this["orchestrator"].url, null)
}

output "orchestrator_queue_arn" {
  description = "ARN of the SQS queue carrying orchestrator wake-up signals."
  value       = try(aws_sqs_queue.this["orchestrator"].arn, null)
}

output "worker_queue_url" {
  description = "URL of the SQS queue carrying worker wake-up signals."
  value       = try(aws_sqs_queue.this["worker"].url, null)
}

output "worker_queue_arn" {
  description = "ARN of the SQS queue carrying worker wake-up signals."
  value       = try(aws_sqs_queue.this["worker"].arn, null)
}

################################################################################
# IAM policy
################################################################################

output "iam_policy_json" {
  description = "Least-privilege IAM policy document (JSON) for a duradyn process: the table, its indexes, both queues and, when given, the KMS keys."
  value       = try(data.aws_iam_policy_document.this[0].json, null)
}

output "iam_policy_arn" {
  description = "ARN of the IAM policy, when create_iam_policy is true."
  value       = try(aws_iam_policy.this[0].arn, null)
}
