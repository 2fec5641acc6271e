variable "region" {
  description = "AWS region to create the table and queues in."
  type        = string
  default     = "eu-west-1"
  nullable    = false

  validation {
    condition     = can(regex("^[a-z]{2}(-[a-z]+)+-[0-9]+$", var.region))
    error_message = "region must be an AWS region name such as \"eu-west-1\"."
  }
}

variable "name" {
  description = "Name of the table; the queues are named after it."
  type        = string
  default     = "duradyn-example"
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{3,60}$", var.name))
    error_message = "name must be 3 to 60 characters from A-Z, a-z, 0-9, '_' and '-' (queue names add a suffix)."
  }
}
