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

output "service_name" {
  description = "Name of the ECS service."
  value       = module.workers.service_name
}

output "log_group_name" {
  description = "The service's log group."
  value       = module.workers.log_group_name
}
