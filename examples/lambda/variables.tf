variable "region" {
  description = "AWS region to deploy to."
  type        = string
}

variable "name" {
  description = "Name of the table; the queues and the function are named after it."
  type        = string
  default     = "duradyn-lambda"
}

variable "zip_path" {
  description = "The function's package. Default null: build/lambda/bootstrap.zip at the root of the repository, which make lambda-zip writes."
  type        = string
  default     = null
}

variable "alarm_email" {
  description = "An e-mail address subscribed to the alarms' SNS topic (confirm the subscription AWS sends). Default null: the topic is created, with no subscription."
  type        = string
  default     = null
}
