# Exactly what a Go program needs to connect: the table name for the
# provider, one URL per signal queue for package queues, and the region for
# the SDK configuration.

output "table_name" {
  description = "Name of the DynamoDB table."
  value       = module.duradyn.table_name
}

output "orchestrator_queue_url" {
  description = "URL of the SQS queue carrying orchestrator wake-up signals (queues.Options.OrchestratorQueueURL)."
  value       = module.duradyn.orchestrator_queue_url
}

output "worker_queue_url" {
  description = "URL of the SQS queue carrying worker wake-up signals (queues.Options.WorkerQueueURL)."
  value       = module.duradyn.worker_queue_url
}

output "region" {
  description = "AWS region of the table and queues."
  value       = module.duradyn.region
}
