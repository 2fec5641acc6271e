output "cluster_arn" {
  description = "ARN of the cluster the service runs in."
  value       = local.cluster_arn
}

output "service_name" {
  description = "Name of the service."
  value       = aws_ecs_service.this.name
}

output "task_definition_arn" {
  description = "ARN of the task definition."
  value       = aws_ecs_task_definition.this.arn
}

output "task_role_name" {
  description = "Name of the task role: attach more policies to it for what your activities call."
  value       = aws_iam_role.task.name
}

output "task_role_arn" {
  description = "ARN of the task role."
  value       = aws_iam_role.task.arn
}

output "execution_role_arn" {
  description = "ARN of the execution role."
  value       = aws_iam_role.execution.arn
}

output "log_group_name" {
  description = "The service's log group."
  value       = aws_cloudwatch_log_group.this.name
}
