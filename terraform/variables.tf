################################################################################
# Module
################################################################################

variable "create" {
  description = "Whether to create any resource. With false the module creates nothing and every output is null."
  type        = bool
  default     = true
  nullable    = false
}

variable "tags" {
  description = "Tags applied to every resource the module creates."
  type        = map(string)
  default     = {}
  nullable    = false
}

################################################################################
# Table
################################################################################

variable "table_name" {
  description = "Name of the DynamoDB table holding every orchestration, history and queue row. Also the default prefix of the queue and policy names."
  type        = string
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9_.-]{3,255}$", var.table_name))
    error_message = "table_name must be 3 to 255 characters from A-Z, a-z, 0-9, '_', '-' and '.'."
  }
}

variable "billing_mode" {
  description = "Billing mode of the table: PAY_PER_REQUEST (on demand) or PROVISIONED. PROVISIONED needs provisioned_capacity."
  type        = string
  default     = "PAY_PER_REQUEST"
  nullable    = false

  validation {
    condition     = contains(["PAY_PER_REQUEST", "PROVISIONED"], var.billing_mode)
    error_message = "billing_mode must be \"PAY_PER_REQUEST\" or \"PROVISIONED\"."
  }
}

variable "provisioned_capacity" {
  description = "Read and write capacity units of the table and of each global secondary index (ready, instances). Required when billing_mode is PROVISIONED, must be null otherwise. With autoscaling, the capacities the table is created with and the default minimums of auto scaling."
  type = object({
    table = object({
      read  = number
      write = number
    })
    ready = object({
      read  = number
      write = number
    })
    instances = object({
      read  = number
      write = number
    })
  })
  default = null

  validation {
    condition     = (var.billing_mode == "PROVISIONED") == (var.provisioned_capacity != null)
    error_message = "Set provisioned_capacity (table, ready and instances) when billing_mode is \"PROVISIONED\", and leave it null when billing_mode is \"PAY_PER_REQUEST\"."
  }

  validation {
    condition = alltrue(flatten([
      for c in(var.provisioned_capacity == null ? [] : values(var.provisioned_capacity)) :
      [for n in [c.read, c.write] : n >= 1 && n == floor(n)]
    ]))
    error_message = "Every read and write capacity in provisioned_capacity must be a whole number of at least 1."
  }
}

variable "autoscaling" {
  description = <<-EOT
    DynamoDB auto scaling of the read and write capacity of the table and of each global secondary index (ready, instances), with billing_mode "PROVISIONED" only. Default null: no auto scaling, the capacities stay at provisioned_capacity.

    For each of table, ready and instances, read and write take a max and an optional min (whole numbers, min at least 1, min at most max); min defaults to the provisioned_capacity figure, which is also the capacity the table is created with. target_utilization is the percentage of consumed to provisioned capacity that auto scaling keeps (20 to 90, default 70). scale_in_cooldown and scale_out_cooldown are the seconds after a scaling activity before the next one in the same direction (default 0, as AWS for DynamoDB).

    With autoscaling set, Terraform no longer updates the capacities, nor the indexes, of the existing table: see the README. Turning it on or off moves the table to another resource address; move the state (a moved block) first.
  EOT
  type = object({
    target_utilization = optional(number, 70)
    scale_in_cooldown  = optional(number, 0)
    scale_out_cooldown = optional(number, 0)
    table = object({
      read  = object({ min = optional(number), max = number })
      write = object({ min = optional(number), max = number })
    })
    ready = object({
      read  = object({ min = optional(number), max = number })
      write = object({ min = optional(number), max = number })
    })
    instances = object({
      read  = object({ min = optional(number), max = number })
      write = object({ min = optional(number), max = number })
    })
  })
  default = null

  validation {
    condition     = var.autoscaling == null || var.billing_mode == "PROVISIONED"
    error_message = "autoscaling needs billing_mode = \"PROVISIONED\" (and provisioned_capacity): an on-demand table scales by itself."
  }

  validation {
    condition = alltrue(flatten([
      for part in(var.autoscaling == null ? [] : ["table", "ready", "instances"]) : [
        # A min left out counts as 1 here; a max left out (null) fails.
        for dim in ["read", "write"] : [
          for n in [try(coalesce(var.autoscaling[part][dim].min, 1), null), try(var.autoscaling[part][dim].max, null)] :
          n == null ? false : n >= 1 && n == floor(n)
        ]
      ]
    ]))
    error_message = "In autoscaling, every read and write of table, ready and instances needs a max, and every min and max must be a whole number of at least 1."
  }

  validation {
    # A min left out is the provisioned_capacity figure; a missing
    # provisioned_capacity is reported by its own validation.
    condition = alltrue(flatten([
      for part in(var.autoscaling == null ? [] : ["table", "ready", "instances"]) : [
        for dim in ["read", "write"] :
        try(coalesce(var.autoscaling[part][dim].min, var.provisioned_capacity[part][dim]) <= var.autoscaling[part][dim].max, true)
      ]
    ]))
    error_message = "In autoscaling, every max must be at least its min; a min left out is the provisioned_capacity figure of the same table or index, read or write."
  }

  validation {
    condition     = var.autoscaling == null ? true : var.autoscaling.target_utilization >= 20 && var.autoscaling.target_utilization <= 90
    error_message = "autoscaling.target_utilization must be a percentage from 20 to 90."
  }

  validation {
    condition = alltrue([
      for n in(var.autoscaling == null ? [] : [var.autoscaling.scale_in_cooldown, var.autoscaling.scale_out_cooldown]) :
      n >= 0 && n == floor(n)
    ])
    error_message = "autoscaling.scale_in_cooldown and scale_out_cooldown must be whole numbers of seconds, at least 0."
  }
}

variable "point_in_time_recovery_enabled" {
  description = "Whether point-in-time recovery (continuous backups) is enabled on the table."
  type        = bool
  default     = true
  nullable    = false
}

variable "deletion_protection_enabled" {
  description = "Whether the table is protected against deletion. Turn it off before destroying the module."
  type        = bool
  default     = true
  nullable    = false
}

variable "table_kms_key_arn" {
  description = "ARN of a customer managed KMS key that encrypts the table at rest. Default null: DynamoDB encrypts with an AWS owned key."
  type        = string
  default     = null

  validation {
    condition     = var.table_kms_key_arn == null || can(regex("^arn:aws[a-zA-Z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.table_kms_key_arn))
    error_message = "table_kms_key_arn must be null or a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/KEY_ID)."
  }
}

variable "table_tags" {
  description = "Additional tags for the table, merged over tags."
  type        = map(string)
  default     = {}
  nullable    = false
}

################################################################################
# Signal queues
################################################################################

variable "orchestrator_queue_name" {
  description = "Name of the SQS standard queue carrying orchestrator wake-up signals. Default null: \"<table_name>-orchestrator\"."
  type        = string
  default     = null

  validation {
    condition     = var.orchestrator_queue_name == null || can(regex("^[A-Za-z0-9_-]{1,80}$", var.orchestrator_queue_name))
    error_message = "orchestrator_queue_name must be null or 1 to 80 characters from A-Z, a-z, 0-9, '_' and '-' (a standard queue, no .fifo suffix)."
  }
}

variable "worker_queue_name" {
  description = "Name of the SQS standard queue carrying worker wake-up signals. Default null: \"<table_name>-worker\". Must differ from the orchestrator queue's name."
  type        = string
  default     = null

  validation {
    condition     = var.worker_queue_name == null || can(regex("^[A-Za-z0-9_-]{1,80}$", var.worker_queue_name))
    error_message = "worker_queue_name must be null or 1 to 80 characters from A-Z, a-z, 0-9, '_' and '-' (a standard queue, no .fifo suffix)."
  }

  validation {
    condition     = var.worker_queue_name == null || var.worker_queue_name != var.orchestrator_queue_name
    error_message = "worker_queue_name must differ from orchestrator_queue_name: each kind of signal needs its own queue."
  }
}

variable "queue_message_retention_seconds" {
  description = "How long SQS keeps an unreceived signal, in seconds (60 to 1209600). Signals are only hints: the work is in DynamoDB, so a short retention keeps a backlog built while no dispatcher ran from costing a long drain. Default 300 (5 minutes); values above 900 also keep signals delayed by the SQS maximum of 15 minutes."
  type        = number
  default     = 300
  nullable    = false

  validation {
    condition     = var.queue_message_retention_seconds >= 60 && var.queue_message_retention_seconds <= 1209600 && var.queue_message_retention_seconds == floor(var.queue_message_retention_seconds)
    error_message = "queue_message_retention_seconds must be a whole number from 60 (1 minute) to 1209600 (14 days)."
  }
}

variable "queue_visibility_timeout_seconds" {
  description = "Default visibility timeout of the signal queues, in seconds (2 to 30). The receiver asks for 2 s on every receive anyway and deletes messages at once; this only matters for other consumers."
  type        = number
  default     = 5
  nullable    = false

  validation {
    condition     = var.queue_visibility_timeout_seconds >= 2 && var.queue_visibility_timeout_seconds <= 30 && var.queue_visibility_timeout_seconds == floor(var.queue_visibility_timeout_seconds)
    error_message = "queue_visibility_timeout_seconds must be a whole number from 2 to 30: a signal whose delete failed should be back on the queue quickly."
  }
}

variable "queue_receive_wait_time_seconds" {
  description = "ReceiveMessageWaitTimeSeconds of the signal queues (0 to 20). Keep it at 0: the Go SDK omits WaitTimeSeconds=0 from ReceiveMessage requests, so any other value turns the receiver's short polls into long polls of this length. The receiver sets its own long-poll time on every request."
  type        = number
  default     = 0
  nullable    = false

  validation {
    condition     = var.queue_receive_wait_time_seconds >= 0 && var.queue_receive_wait_time_seconds <= 20 && var.queue_receive_wait_time_seconds == floor(var.queue_receive_wait_time_seconds)
    error_message = "queue_receive_wait_time_seconds must be a whole number from 0 to 20; 0 is the value duradyn expects."
  }
}

variable "queue_kms_key_arn" {
  description = "ARN of a customer managed KMS key that encrypts the signal queues. Default null: SQS-managed server-side encryption (SSE-SQS)."
  type        = string
  default     = null

  validation {
    condition     = var.queue_kms_key_arn == null || can(regex("^arn:aws[a-zA-Z-]*:kms:[a-z0-9-]+:[0-9]{12}:key/.+$", var.queue_kms_key_arn))
    error_message = "queue_kms_key_arn must be null or a KMS key ARN (arn:aws:kms:REGION:ACCOUNT:key/KEY_ID); aliases cannot be named in an IAM policy."
  }
}

variable "queue_kms_data_key_reuse_period_seconds" {
  description = "How long SQS reuses a data key before calling KMS again, in seconds (60 to 86400). Used only with queue_kms_key_arn."
  type        = number
  default     = 300
  nullable    = false

  validation {
    condition     = var.queue_kms_data_key_reuse_period_seconds >= 60 && var.queue_kms_data_key_reuse_period_seconds <= 86400 && var.queue_kms_data_key_reuse_period_seconds == floor(var.queue_kms_data_key_reuse_period_seconds)
    error_message = "queue_kms_data_key_reuse_period_seconds must be a whole number from 60 (1 minute) to 86400 (24 hours)."
  }
}

variable "queue_tags" {
  description = "Additional tags for both signal queues, merged over tags."
  type        = map(string)
  default     = {}
  nullable    = false
}

################################################################################
# IAM policy
################################################################################

variable "create_iam_policy" {
  description = "Whether to create an aws_iam_policy from the iam_policy_json output. The JSON output exists either way."
  type        = bool
  default     = false
  nullable    = false
}

variable "iam_policy_name" {
  description = "Name of the IAM policy created when create_iam_policy is true. Default null: \"<table_name>-duradyn\"."
  type        = string
  default     = null

  validation {
    condition     = var.iam_policy_name == null || can(regex("^[A-Za-z0-9+=,.@_-]{1,128}$", var.iam_policy_name))
    error_message = "iam_policy_name must be null or 1 to 128 characters from A-Z, a-z, 0-9 and +=,.@_-."
  }
}

variable "iam_policy_path" {
  description = "Path of the IAM policy created when create_iam_policy is true."
  type        = string
  default     = "/"
  nullable    = false

  validation {
    condition     = can(regex("^/([\\x21-\\x7E]{0,510}/)?$", var.iam_policy_path))
    error_message = "iam_policy_path must start and end with '/', for example \"/\" or \"/duradyn/\"."
  }
}
