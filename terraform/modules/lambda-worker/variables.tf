################################################################################
# The deployment it serves (outputs of the duradyn module)
################################################################################

variable "name" {
  description = "Name of the function; also the prefix of its role, log group, schedule and alarms."
  type        = string
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,48}$", var.name))
    error_message = "name must be 1 to 48 characters from A-Z, a-z, 0-9, '_' and '-' (it prefixes the names of the role and the schedule, which have limits of their own)."
  }
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

variable "orchestrator_queue_arn" {
  description = "ARN of the orchestrator signal queue (module output orchestrator_queue_arn)."
  type        = string
  nullable    = false
}

variable "worker_queue_url" {
  description = "URL of the worker signal queue (module output worker_queue_url)."
  type        = string
  nullable    = false
}

variable "worker_queue_arn" {
  description = "ARN of the worker signal queue (module output worker_queue_arn)."
  type        = string
  nullable    = false
}

variable "iam_policy_json" {
  description = "The least-privilege policy of a duradyn process (module output iam_policy_json): the table, its indexes and the queues. The function's role gets it inline, with what the event source mappings and the logs need besides."
  type        = string
  nullable    = false
}

variable "queue_visibility_timeout_seconds" {
  description = "The signal queues' visibility timeout, in seconds (the duradyn module's queue_visibility_timeout_seconds). Lambda refuses an event source mapping whose function's timeout exceeds it."
  type        = number
  default     = 30
  nullable    = false
}

################################################################################
# The function
################################################################################

variable "zip_path" {
  description = "Path of the deployment package: the zip make lambda-zip builds (build/lambda/bootstrap.zip), holding bootstrap for provided.al2023 on arm64."
  type        = string
  nullable    = false
}

variable "memory_size" {
  description = "Memory of the function, in MB (128 to 10240); CPU grows with it. The runtime itself needs little: 256 serves activities that do I/O."
  type        = number
  default     = 256
  nullable    = false

  validation {
    condition     = var.memory_size >= 128 && var.memory_size <= 10240 && var.memory_size == floor(var.memory_size)
    error_message = "memory_size must be a whole number from 128 to 10240."
  }
}

variable "timeout" {
  description = "The function's timeout, in seconds. An invocation stops fetching 3 s before it (lambdahost.Options.StopBefore), so activities must finish within timeout - 3 s; at most the queues' visibility timeout."
  type        = number
  default     = 30
  nullable    = false

  validation {
    condition     = var.timeout >= 5 && var.timeout <= 900 && var.timeout == floor(var.timeout)
    error_message = "timeout must be a whole number of seconds from 5 (an invocation keeps 3 s to stop) to 900."
  }

  validation {
    condition     = var.timeout <= var.queue_visibility_timeout_seconds
    error_message = "timeout must not exceed queue_visibility_timeout_seconds: Lambda refuses such an event source mapping."
  }
}

variable "reserved_concurrency" {
  description = "Reserved concurrency of the function: the most invocations at once, of both mappings and the schedule together. Default null: unreserved (the account's pool)."
  type        = number
  default     = null

  validation {
    condition     = var.reserved_concurrency == null || try(var.reserved_concurrency >= 1, false)
    error_message = "reserved_concurrency must be null or at least 1 (0 would stop the function)."
  }
}

variable "environment" {
  description = "More environment variables for the function (DURADYN_SHARDS, say). DURADYN_TABLE and the queue URLs are set from the inputs above."
  type        = map(string)
  default     = {}
  nullable    = false
}

variable "log_retention_days" {
  description = "Retention of the function's log group, in days (one of CloudWatch Logs' values)."
  type        = number
  default     = 14
  nullable    = false

  validation {
    condition     = contains([1, 3, 5, 7, 14, 30, 60, 90, 120, 150, 180, 365, 400, 545, 731, 1096, 1827, 2192, 2557, 2922, 3288, 3653], var.log_retention_days)
    error_message = "log_retention_days must be one of CloudWatch Logs' retention values (1, 3, 5, 7, 14, 30, 60, 90, ... 3653)."
  }
}

################################################################################
# Event source mappings
################################################################################

variable "orchestrator_mapping" {
  description = "The orchestrator queue's event source mapping: batch_size (1 to 100; above 10 needs a batching window), batching_window_seconds (0 to 300), maximum_concurrency (2 to 1000 invocations at once)."
  type = object({
    batch_size              = optional(number, 10)
    batching_window_seconds = optional(number, 0)
    maximum_concurrency     = optional(number, 10)
  })
  default  = {}
  nullable = false

  validation {
    condition     = var.orchestrator_mapping.batch_size >= 1 && var.orchestrator_mapping.batch_size <= 100 && (var.orchestrator_mapping.batch_size <= 10 || var.orchestrator_mapping.batching_window_seconds >= 1)
    error_message = "orchestrator_mapping.batch_size must be 1 to 100 (the signals a host keeps for its fetches), and above 10 only with batching_window_seconds of 1 or more."
  }

  validation {
    condition     = var.orchestrator_mapping.batching_window_seconds >= 0 && var.orchestrator_mapping.batching_window_seconds <= 300 && var.orchestrator_mapping.maximum_concurrency >= 2 && var.orchestrator_mapping.maximum_concurrency <= 1000
    error_message = "orchestrator_mapping.batching_window_seconds must be 0 to 300 and maximum_concurrency 2 to 1000."
  }
}

variable "worker_mapping" {
  description = "The worker queue's event source mapping, as orchestrator_mapping."
  type = object({
    batch_size              = optional(number, 10)
    batching_window_seconds = optional(number, 0)
    maximum_concurrency     = optional(number, 10)
  })
  default  = {}
  nullable = false

  validation {
    condition     = var.worker_mapping.batch_size >= 1 && var.worker_mapping.batch_size <= 100 && (var.worker_mapping.batch_size <= 10 || var.worker_mapping.batching_window_seconds >= 1)
    error_message = "worker_mapping.batch_size must be 1 to 100 (the signals a host keeps for its fetches), and above 10 only with batching_window_seconds of 1 or more."
  }

  validation {
    condition     = var.worker_mapping.batching_window_seconds >= 0 && var.worker_mapping.batching_window_seconds <= 300 && var.worker_mapping.maximum_concurrency >= 2 && var.worker_mapping.maximum_concurrency <= 1000
    error_message = "worker_mapping.batching_window_seconds must be 0 to 300 and maximum_concurrency 2 to 1000."
  }
}

################################################################################
# Sweep schedule
################################################################################

variable "sweep_schedule_expression" {
  description = "When EventBridge Scheduler invokes the sweep, which signals the work no signal announces (lost signals, timers beyond 15 minutes, leases of frozen invocations). Its period bounds how late such work starts. Default rate(1 minute), Scheduler's shortest."
  type        = string
  default     = "rate(1 minute)"
  nullable    = false

  validation {
    condition     = can(regex("^(rate|cron|at)\\(.+\\)$", var.sweep_schedule_expression))
    error_message = "sweep_schedule_expression must be a Scheduler expression: rate(...), cron(...) or at(...)."
  }
}

variable "sweep_enabled" {
  description = "Whether the sweep schedule is enabled. Disable it only while another process sweeps the table."
  type        = bool
  default     = true
  nullable    = false
}

################################################################################
# Alarms
################################################################################

variable "alarms" {
  description = "CloudWatch alarms: function errors and throttles (any in a period), the age of the oldest message on each queue (queue_age_seconds), and DynamoDB throttles on the table (any in a period). period_seconds and evaluation_periods apply to all."
  type = object({
    enabled            = optional(bool, true)
    period_seconds     = optional(number, 300)
    evaluation_periods = optional(number, 1)
    queue_age_seconds  = optional(number, 300)
  })
  default  = {}
  nullable = false

  validation {
    condition     = contains([10, 30, 60], var.alarms.period_seconds) || (var.alarms.period_seconds >= 60 && var.alarms.period_seconds % 60 == 0)
    error_message = "alarms.period_seconds must be 10, 30 or a multiple of 60."
  }
}

variable "alarm_topic_arn" {
  description = "An SNS topic the alarms notify (alarm and OK). Default null: none, unless create_alarm_topic."
  type        = string
  default     = null
}

variable "create_alarm_topic" {
  description = "Whether to create an SNS topic for the alarms (output alarm_topic_arn); subscribe to it yourself. Ignored when alarm_topic_arn is set."
  type        = bool
  default     = false
  nullable    = false
}

variable "tags" {
  description = "Tags for every resource the module creates."
  type        = map(string)
  default     = {}
  nullable    = false
}
