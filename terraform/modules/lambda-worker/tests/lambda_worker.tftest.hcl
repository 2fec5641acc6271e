# Plans the module against a mocked AWS provider: no credentials, no network.
# Run with `terraform test` in terraform/modules/lambda-worker
# (scripts/tf-validate does). tests/bootstrap.zip stands in for the package
# make lambda-zip builds.

mock_provider "aws" {
  # Mocked values are known when the plan is made, so that plans can be checked.
  override_during = plan

  mock_resource "aws_lambda_function" {
    defaults = {
      arn = "arn:aws:lambda:eu-west-1:123456789012:function:orders-worker"
    }
  }
  mock_resource "aws_iam_role" {
    defaults = {
      arn = "arn:aws:iam::123456789012:role/orders-worker-lambda"
    }
  }
  mock_resource "aws_cloudwatch_log_group" {
    defaults = {
      arn = "arn:aws:logs:eu-west-1:123456789012:log-group:/aws/lambda/orders-worker"
    }
  }
  mock_resource "aws_sns_topic" {
    defaults = {
      arn = "arn:aws:sns:eu-west-1:123456789012:orders-worker-alarms"
    }
  }
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }
}

variables {
  name                   = "orders-worker"
  table_name             = "orders"
  orchestrator_queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-orchestrator"
  orchestrator_queue_arn = "arn:aws:sqs:eu-west-1:123456789012:orders-orchestrator"
  worker_queue_url       = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-worker"
  worker_queue_arn       = "arn:aws:sqs:eu-west-1:123456789012:orders-worker"
  iam_policy_json        = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
  zip_path               = "tests/bootstrap.zip"
}

run "defaults" {
  command = plan

  assert {
    condition     = aws_lambda_function.this.runtime == "provided.al2023" && aws_lambda_function.this.architectures == tolist(["arm64"]) && aws_lambda_function.this.handler == "bootstrap"
    error_message = "The function must run bootstrap on provided.al2023, arm64."
  }

  assert {
    condition     = aws_lambda_function.this.timeout == 30 && aws_lambda_function.this.memory_size == 256 && aws_lambda_function.this.reserved_concurrent_executions == -1
    error_message = "Defaults: 30 s, 256 MB, unreserved concurrency."
  }

  assert {
    condition = aws_lambda_function.this.environment[0].variables == tomap({
      DURADYN_TABLE                  = "orders"
      DURADYN_ORCHESTRATOR_QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-orchestrator"
      DURADYN_WORKER_QUEUE_URL       = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-worker"
    })
    error_message = "The function's environment must name the table and both queues, as dynamo.NewFromEnv reads them."
  }

  assert {
    condition     = aws_lambda_function.this.source_code_hash == filebase64sha256("tests/bootstrap.zip")
    error_message = "The function must be redeployed when the package changes."
  }

  assert {
    condition     = keys(aws_lambda_event_source_mapping.this) == ["orchestrator", "worker"]
    error_message = "There must be one event source mapping per queue."
  }

  assert {
    condition = alltrue([for k, m in aws_lambda_event_source_mapping.this :
      m.function_response_types == toset(["ReportBatchItemFailures"]) && m.batch_size == 10 && m.maximum_batching_window_in_seconds == 0 && m.scaling_config[0].maximum_concurrency == 10
    ])
    error_message = "Mappings report batch item failures, with batches of 10, no window and a maximum concurrency of 10 by default."
  }

  assert {
    condition     = aws_lambda_event_source_mapping.this["orchestrator"].event_source_arn == var.orchestrator_queue_arn && aws_lambda_event_source_mapping.this["worker"].event_source_arn == var.worker_queue_arn
    error_message = "Each mapping must consume its own queue."
  }

  assert {
    condition     = aws_scheduler_schedule.sweep.schedule_expression == "rate(1 minute)" && aws_scheduler_schedule.sweep.state == "ENABLED" && jsondecode(aws_scheduler_schedule.sweep.target[0].input) == { duradyn = "sweep" }
    error_message = "The sweep schedule must invoke the function every minute with {\"duradyn\":\"sweep\"}."
  }

  assert {
    condition     = aws_cloudwatch_log_group.this.name == "/aws/lambda/orders-worker" && aws_cloudwatch_log_group.this.retention_in_days == 14
    error_message = "The log group must be the function's, kept 14 days by default."
  }

  assert {
    condition     = aws_iam_role_policy.duradyn.policy == var.iam_policy_json
    error_message = "The role must hold the duradyn policy it is given."
  }

  assert {
    condition     = sort(keys(aws_cloudwatch_metric_alarm.this)) == tolist(["dynamodb-read-throttles", "dynamodb-write-throttles", "errors", "orchestrator-queue-age", "throttles", "worker-queue-age"])
    error_message = "The alarms must cover function errors and throttles, each queue's oldest message and DynamoDB throttles."
  }

  assert {
    condition     = aws_cloudwatch_metric_alarm.this["worker-queue-age"].dimensions == tomap({ QueueName = "orders-worker" }) && aws_cloudwatch_metric_alarm.this["worker-queue-age"].threshold == 300
    error_message = "The queue-age alarm must watch the queue by name, with a 300 s threshold by default."
  }

  assert {
    condition     = length(aws_sns_topic.alarms) == 0 && alltrue([for a in aws_cloudwatch_metric_alarm.this : length(a.alarm_actions) == 0])
    error_message = "Without a topic the alarms notify nobody."
  }
}

run "tuned" {
  command = plan

  variables {
    timeout                          = 60
    queue_visibility_timeout_seconds = 120
    reserved_concurrency             = 20
    memory_size                      = 512
    environment                      = { DURADYN_SHARDS = "32" }
    orchestrator_mapping             = { batch_size = 50, batching_window_seconds = 2, maximum_concurrency = 5 }
    worker_mapping                   = { maximum_concurrency = 40 }
    sweep_schedule_expression        = "rate(5 minutes)"
    create_alarm_topic               = true
  }

  assert {
    condition     = aws_lambda_function.this.timeout == 60 && aws_lambda_function.this.reserved_concurrent_executions == 20 && aws_lambda_function.this.environment[0].variables["DURADYN_SHARDS"] == "32"
    error_message = "timeout, reserved_concurrency and environment must reach the function."
  }

  assert {
    condition = (aws_lambda_event_source_mapping.this["orchestrator"].batch_size == 50 &&
      aws_lambda_event_source_mapping.this["orchestrator"].maximum_batching_window_in_seconds == 2 &&
      aws_lambda_event_source_mapping.this["orchestrator"].scaling_config[0].maximum_concurrency == 5 &&
      aws_lambda_event_source_mapping.this["worker"].batch_size == 10 &&
    aws_lambda_event_source_mapping.this["worker"].scaling_config[0].maximum_concurrency == 40)
    error_message = "Each mapping takes its own batch size, window and maximum concurrency."
  }

  assert {
    condition     = aws_scheduler_schedule.sweep.schedule_expression == "rate(5 minutes)"
    error_message = "The sweep schedule's expression must be the variable's."
  }

  assert {
    condition     = length(aws_sns_topic.alarms) == 1 && alltrue([for a in aws_cloudwatch_metric_alarm.this : a.alarm_actions == toset(["arn:aws:sns:eu-west-1:123456789012:orders-worker-alarms"])])
    error_message = "With create_alarm_topic every alarm notifies the topic it creates."
  }
}

run "timeout_beyond_visibility_timeout" {
  command = plan

  variables {
    timeout                          = 60
    queue_visibility_timeout_seconds = 30
  }

  expect_failures = [var.timeout]
}

run "batch_beyond_ten_without_window" {
  command = plan

  variables {
    worker_mapping = { batch_size = 20 }
  }

  expect_failures = [var.worker_mapping]
}

run "no_alarms" {
  command = plan

  variables {
    alarms = { enabled = false }
  }

  assert {
    condition     = length(aws_cloudwatch_metric_alarm.this) == 0
    error_message = "alarms.enabled = false creates no alarm."
  }
}
