# The first four are what the duradyn command and dynamo.NewFromEnv read
# (DURADYN_TABLE, DURADYN_ORCHESTRATOR_QUEUE_URL, DURADYN_WORKER_QUEUE_URL,
# AWS_REGION).

output "table_name" {
  description = "Name of the DynamoDB table."
  value       = module.duradyn.table_name
}

output "orchestrator_queue_url" {
  description = "URL of the orchestrator signal queue."
  value       = module.duradyn.orchestrator_queue_url
}

output "worker_queue_url" {
  description = "URL of the worker signal queue."
  value       = module.duradyn.worker_queue_url
}

output "region" {
  description = "AWS region of the deployment."
  value       = module.duradyn.region
}

output "function_name" {
  description = "Name of the function."
  value       = module.worker.function_name
}

output "role_name" {
  description = "The function's execution role."
  value       = module.worker.role_name
}

output "log_group_name" {
  description = "The function's log group."
  value       = module.worker.log_group_name
}

output "event_source_mapping_uuids" {
  description = "UUIDs of the event source mappings, by queue."
  value       = module.worker.event_source_mapping_uuids
}

output "sweep_schedule_arn" {
  description = "ARN of the sweep schedule."
  value       = module.worker.sweep_schedule_arn
}

output "alarm_topic_arn" {
  description = "The SNS topic the alarms notify."
  value       = module.worker.alarm_topic_arn
}
