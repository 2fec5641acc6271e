variable "name" {
  description = "Name of the service; also the prefix of its roles, task family and log group."
  type        = string
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,48}$", var.name))
    error_message = "name must be 1 to 48 characters from A-Z, a-z, 0-9, '_' and '-'."
  }
}

variable "image" {
  description = "The worker's container image (a Go program that builds a durable.Runtime with dynamo.NewFromEnv and calls Run)."
  type        = string
  nullable    = false
}

variable "cluster_arn" {
  description = "The ECS cluster to run in. Default null: the module creates one named after the service."
  type        = string
  default     = null
}

variable "cpu" {
  description = "CPU units of a task (256 = a quarter vCPU)."
  type        = number
  default     = 256
  nullable    = false
}

variable "memory" {
  description = "Memory of a task, in MiB (valid with cpu per Fargate's table)."
  type        = number
  default     = 512
  nullable    = false
}

variable "desired_count" {
  description = "How many tasks run. Each is one duradyn process; they share the table and the queues."
  type        = number
  default     = 1
  nullable    = false

  validation {
    condition     = var.desired_count >= 0 && var.desired_count == floor(var.desired_count)
    error_message = "desired_count must be a whole number, 0 or more."
  }
}

variable "cpu_architecture" {
  description = "ARM64 (Graviton, as the Lambda function) or X86_64: what the image is built for."
  type        = string
  default     = "ARM64"
  nullable    = false

  validation {
    condition     = contains(["ARM64", "X86_64"], var.cpu_architecture)
    error_message = "cpu_architecture must be ARM64 or X86_64."
  }
}

variable "subnet_ids" {
  description = "Subnets of the tasks. They need a route to DynamoDB and SQS (a NAT gateway, VPC endpoints, or public subnets with assign_public_ip)."
  type        = list(string)
  nullable    = false
}

variable "security_group_ids" {
  description = "Security groups of the tasks: outbound HTTPS is all a worker needs."
  type        = list(string)
  nullable    = false
}

variable "assign_public_ip" {
  description = "Whether tasks get a public IP (public subnets without NAT)."
  type        = bool
  default     = false
  nullable    = false
}

variable "table_name" {
  description = "Name of the duradyn table (module output table_name)."
  type        = string
  nullable    = false
}

variable "orchestrator_queue_url" {
  description = "URL of the orchestrator signal queue (module output orchestrator_queue_url)."
  type        = string
  nullable    = false
}

variable "worker_queue_url" {
  description = "URL of the worker signal queue (module output worker_queue_url)."
  type        = string
  nullable    = false
}

variable "iam_policy_json" {
  description = "The least-privilege policy of a duradyn process (module output iam_policy_json), given to the task role inline."
  type        = string
  nullable    = false
}

variable "environment" {
  description = "More environment variables for the container. DURADYN_TABLE, the queue URLs and AWS_REGION are set by the module."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "stop_timeout" {
  description = "Seconds ECS waits after SIGTERM before it kills the container (2 to 120): time for the runtime's graceful shutdown (durable.Options.ShutdownTimeout, 10 s by default)."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = var.stop_timeout >= 2 && var.stop_timeout <= 120
    error_message = "stop_timeout must be 2 to 120 seconds."
  }
}

variable "log_retention_days" {
  description = "Retention of the service's log group, in days."
  type        = number
  default     = 14
  nullable    = false
}

variable "tags" {
  description = "Tags for every resource the module creates."
  type        = map(string)
  default     = {}
  nullable    = false
}
