output "function_name" {
  description = "Name of the function."
  value       = aws_lambda_function.this.function_name
}

output "function_arn" {
  description = "ARN of the function."
  value       = aws_lambda_function.this.arn
}

output "role_name" {
  description = "Name of the function's execution role: attach more policies to it for what your activities call."
  value       = aws_iam_role.this.name
}

output "role_arn" {
  description = "ARN of the function's execution role."
  value       = aws_iam_role.this.arn
}

output "log_group_name" {
  description = "The function's log group."
  value       = aws_cloudwatch_log_group.this.name
}

output "event_source_mapping_uuids" {
  description = "UUIDs of the event source mappings, by queue (orchestrator, worker)."
  value       = { for k, m in aws_lambda_event_source_mapping.this : k => m.uuid }
}

output "sweep_schedule_arn" {
  description = "ARN of the sweep schedule."
  value       = aws_scheduler_schedule.sweep.arn
}

output "alarm_arns" {
  description = "ARNs of the alarms, by name (errors, throttles, orchestrator-queue-age, worker-queue-age, dynamodb-read-throttles, dynamodb-write-throttles)."
  value       = { for k, a in aws_cloudwatch_metric_alarm.this : k => a.arn }
}

output "alarm_topic_arn" {
  description = "The SNS topic the alarms notify, if any."
  value       = local.alarm_topic_arn
}
