# A duradyn deployment on AWS Lambda: the table and the two signal queues
# (the duradyn module), and the function serving Hello and the order
# workflow (main.go in this directory), invoked by an event source mapping
# on each queue and by the sweep schedule (the lambda-worker module).
#
#   make lambda-zip                            # at the root of the repository
#   terraform -chdir=examples/lambda init
#   terraform -chdir=examples/lambda apply -var region=eu-west-1
#
# docs/lambda.md is the guide.

provider "aws" {
  region = var.region
}

locals {
  zip_path = coalesce(var.zip_path, "${path.module}/../../build/lambda/bootstrap.zip")
  tags     = { Project = "duradyn-lambda-example" }
}

module "duradyn" {
  source = "../../terraform"

  table_name = var.name

  # The mappings take a message for as long as an invocation may run: the
  # queues' visibility timeout must be at least the function's timeout.
  queue_visibility_timeout_seconds = 30

  # An example should be easy to destroy; keep the default (true) in
  # production.
  deletion_protection_enabled = false

  tags = local.tags
}

module "worker" {
  source = "../../terraform/modules/lambda-worker"

  name                             = "${var.name}-worker"
  zip_path                         = local.zip_path
  table_name                       = module.duradyn.table_name
  orchestrator_queue_url           = module.duradyn.orchestrator_queue_url
  orchestrator_queue_arn           = module.duradyn.orchestrator_queue_arn
  worker_queue_url                 = module.duradyn.worker_queue_url
  worker_queue_arn                 = module.duradyn.worker_queue_arn
  iam_policy_json                  = module.duradyn.iam_policy_json
  queue_visibility_timeout_seconds = 30
  timeout                          = 30
  create_alarm_topic               = true

  tags = local.tags
}

resource "aws_sns_topic_subscription" "alarms" {
  count = var.alarm_email == null ? 0 : 1

  topic_arn = module.worker.alarm_topic_arn
  protocol  = "email"
  endpoint  = var.alarm_email
}
