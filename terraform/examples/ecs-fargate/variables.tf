variable "region" {
  description = "AWS region to deploy to."
  type        = string
}

variable "name" {
  description = "Name of the table; the queues and the service are named after it."
  type        = string
  default     = "duradyn-ecs"
}

variable "image" {
  description = "The worker's container image: a Go program running durable.Runtime.Run on dynamo.NewFromEnv (examples/hello is one)."
  type        = string
}

variable "subnet_ids" {
  description = "Subnets of the tasks, with a route to DynamoDB and SQS."
  type        = list(string)
}

variable "security_group_ids" {
  description = "Security groups of the tasks (outbound HTTPS)."
  type        = list(string)
}

variable "desired_count" {
  description = "How many worker tasks run."
  type        = number
  default     = 2
}
