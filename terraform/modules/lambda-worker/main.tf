################################################################################
# A duradyn worker on AWS Lambda (package lambdahost, docs/lambda.md): the
# function, an SQS event source mapping on each signal queue (which then
# belong to the function: no long-running process may poll them), the
# schedule of the sweep invocations, the execution role, the log group and
# the alarms.
################################################################################

locals {
  queues = {
    orchestrator = { arn = var.orchestrator_queue_arn, mapping = var.orchestrator_mapping }
    worker       = { arn = var.worker_queue_arn, mapping = var.worker_mapping }
  }
  alarm_topic_arn = var.alarm_topic_arn != null ? var.alarm_topic_arn : one(aws_sns_topic.alarms[*].arn)
  alarm_actions   = local.alarm_topic_arn == null ? [] : [local.alarm_topic_arn]
}

################################################################################
# Execution role
################################################################################

data "aws_iam_policy_document" "assume_lambda" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["lambda.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "this" {
  name               = "${var.name}-lambda"
  assume_role_policy = data.aws_iam_policy_document.assume_lambda.json
  tags               = var.tags
}

# The table, its indexes and the queues: what every duradyn process needs.
resource "aws_iam_role_policy" "duradyn" {
  name   = "duradyn"
  role   = aws_iam_role.this.id
  policy = var.iam_policy_json
}

# What the event source mappings need beyond it (they receive and delete
# with the function's role), what the host calls to hide a failed message
# for its backoff, and the function's own log group.
data "aws_iam_policy_document" "lambda" {
  statement {
    sid       = "EventSourceMappings"
    actions   = ["sqs:ChangeMessageVisibility", "sqs:DeleteMessage", "sqs:GetQueueAttributes", "sqs:ReceiveMessage"]
    resources = [var.orchestrator_queue_arn, var.worker_queue_arn]
  }

  statement {
    sid       = "Logs"
    actions   = ["logs:CreateLogStream", "logs:PutLogEvents"]
    resources = ["${aws_cloudwatch_log_group.this.arn}:*"]
  }
}

resource "aws_iam_role_policy" "lambda" {
  name   = "lambda"
  role   = aws_iam_role.this.id
  policy = data.aws_iam_policy_document.lambda.json
}

################################################################################
# Function
################################################################################

resource "aws_cloudwatch_log_group" "this" {
  name              = "/aws/lambda/${var.name}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

resource "aws_lambda_function" "this" {
  function_name    = var.name
  role             = aws_iam_role.this.arn
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  handler          = "bootstrap"
  filename         = var.zip_path
  source_code_hash = filebase64sha256(var.zip_path)
  memory_size      = var.memory_size
  timeout          = var.timeout

  reserved_concurrent_executions = var.reserved_concurrency == null ? -1 : var.reserved_concurrency

  environment {
    variables = merge(var.environment, {
      DURADYN_TABLE                  = var.table_name
      DURADYN_ORCHESTRATOR_QUEUE_URL = var.orchestrator_queue_url
      DURADYN_WORKER_QUEUE_URL       = var.worker_queue_url
    })
  }

  tags = var.tags

  # The role's policies and the log group exist before the first invocation.
  depends_on = [aws_iam_role_policy.duradyn, aws_iam_role_policy.lambda, aws_cloudwatch_log_group.this]
}

################################################################################
# Event source mappings: one per queue, partial batch responses
################################################################################

resource "aws_lambda_event_source_mapping" "this" {
  for_each = local.queues

  function_name                      = aws_lambda_function.this.arn
  event_source_arn                   = each.value.arn
  batch_size                         = each.value.mapping.batch_size
  maximum_batching_window_in_seconds = each.value.mapping.batching_window_seconds
  function_response_types            = ["ReportBatchItemFailures"]

  scaling_config {
    maximum_concurrency = each.value.mapping.maximum_concurrency
  }

  tags = var.tags
}

################################################################################
# Sweep schedule
################################################################################

data "aws_iam_policy_document" "assume_scheduler" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["scheduler.amazonaws.com"]
    }
  }
}

resource "aws_iam_role" "scheduler" {
  name               = "${var.name}-sweep"
  assume_role_policy = data.aws_iam_policy_document.assume_scheduler.json
  tags               = var.tags
}

data "aws_iam_policy_document" "invoke" {
  statement {
    actions   = ["lambda:InvokeFunction"]
    resources = [aws_lambda_function.this.arn]
  }
}

resource "aws_iam_role_policy" "scheduler" {
  name   = "invoke"
  role   = aws_iam_role.scheduler.id
  policy = data.aws_iam_policy_document.invoke.json
}

resource "aws_scheduler_schedule" "sweep" {
  name                = "${var.name}-sweep"
  description         = "Sweep for duradyn work no signal announces (lambdahost.Host.HandleSweep)."
  schedule_expression = var.sweep_schedule_expression
  state               = var.sweep_enabled ? "ENABLED" : "DISABLED"

  flexible_time_window {
    mode = "OFF"
  }

  target {
    arn      = aws_lambda_function.this.arn
    role_arn = aws_iam_role.scheduler.arn
    input    = jsonencode({ duradyn = "sweep" })

    # The next sweep comes within the schedule's period: no retries.
    retry_policy {
      maximum_retry_attempts       = 0
      maximum_event_age_in_seconds = 60
    }
  }
}

################################################################################
# Alarms
################################################################################

resource "aws_sns_topic" "alarms" {
  count = var.alarms.enabled && var.create_alarm_topic && var.alarm_topic_arn == null ? 1 : 0

  name = "${var.name}-alarms"
  tags = var.tags
}

locals {
  # name => namespace, metric, dimensions, statistic, threshold.
  alarm_specs = var.alarms.enabled ? merge(
    {
      errors    = { namespace = "AWS/Lambda", metric = "Errors", dimensions = { FunctionName = var.name }, statistic = "Sum", threshold = 0, what = "invocations of ${var.name} failed (a function error, a timeout, or a runtime that could not start)" }
      throttles = { namespace = "AWS/Lambda", metric = "Throttles", dimensions = { FunctionName = var.name }, statistic = "Sum", threshold = 0, what = "invocations of ${var.name} were throttled (reserved or account concurrency)" }
    },
    { for k, q in local.queues : "${k}-queue-age" => {
      namespace = "AWS/SQS", metric = "ApproximateAgeOfOldestMessage", dimensions = { QueueName = element(split(":", q.arn), 5) },
      statistic = "Maximum", threshold = var.alarms.queue_age_seconds,
      what      = "the oldest signal on the ${k} queue waited longer than ${var.alarms.queue_age_seconds} s: the function does not keep up, or fails"
    } },
    { for m in ["ReadThrottleEvents", "WriteThrottleEvents"] : "dynamodb-${lower(replace(m, "ThrottleEvents", ""))}-throttles" => {
      namespace = "AWS/DynamoDB", metric = m, dimensions = { TableName = var.table_name }, statistic = "Sum", threshold = 0,
      what      = "DynamoDB throttled ${lower(replace(m, "ThrottleEvents", ""))}s of table ${var.table_name}"
    } },
  ) : {}
}

resource "aws_cloudwatch_metric_alarm" "this" {
  for_each = local.alarm_specs

  alarm_name          = "${var.name}-${each.key}"
  alarm_description   = "duradyn: ${each.value.what}."
  namespace           = each.value.namespace
  metric_name         = each.value.metric
  dimensions          = each.value.dimensions
  statistic           = each.value.statistic
  period              = var.alarms.period_seconds
  evaluation_periods  = var.alarms.evaluation_periods
  comparison_operator = "GreaterThanThreshold"
  threshold           = each.value.threshold
  treat_missing_data  = "notBreaching"
  alarm_actions       = local.alarm_actions
  ok_actions          = local.alarm_actions
  tags                = var.tags
}
