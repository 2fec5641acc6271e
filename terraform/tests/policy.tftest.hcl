# Renders the IAM policy with the real AWS provider, which builds policy
# documents locally. Every resource is overridden, so nothing reaches AWS and
# no credentials are needed.

provider "aws" {
  region                      = "eu-west-1"
  access_key                  = "test"
  secret_key                  = "test"
  skip_credentials_validation = true
  skip_requesting_account_id  = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
}

override_resource {
  target = aws_dynamodb_table.this[0]
  values = {
    name = "duradyn"
    arn  = "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn"
  }
}

# The table when autoscaling is set, and its scalable targets and policies.
override_resource {
  target = aws_dynamodb_table.autoscaled[0]
  values = {
    name = "duradyn"
    arn  = "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn"
  }
}

override_resource {
  target = aws_appautoscaling_target.this
}

override_resource {
  target = aws_appautoscaling_policy.this
}

override_resource {
  target = aws_sqs_queue.this["orchestrator"]
  values = {
    arn = "arn:aws:sqs:eu-west-1:123456789012:duradyn-orchestrator"
    url = "https://sqs.eu-west-1.amazonaws.com/123456789012/duradyn-orchestrator"
  }
}

override_resource {
  target = aws_sqs_queue.this["worker"]
  values = {
    arn = "arn:aws:sqs:eu-west-1:123456789012:duradyn-worker"
    url = "https://sqs.eu-west-1.amazonaws.com/123456789012/duradyn-worker"
  }
}

variables {
  table_name = "duradyn"
}

run "policy_without_kms" {
  command = apply

  assert {
    condition     = output.region == "eu-west-1"
    error_message = "The region output must come from the table ARN."
  }

  # Policy documents order actions and resources as the provider likes, so
  # the checks sort them. The action lists are those of iam_actions.json
  # (checked against the provider's SDK calls by internal/parity).
  assert {
    condition = jsonencode([for s in jsondecode(output.iam_policy_json).Statement : [s.Sid, s.Effect, sort(flatten([s.Action])), sort(flatten([s.Resource]))]]) == jsonencode([
      ["DuradynTable", "Allow", sort(jsondecode(file("${path.module}/iam_actions.json")).table), ["arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn"]],
      ["DuradynIndexes", "Allow", sort(jsondecode(file("${path.module}/iam_actions.json")).indexes), [
        "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn/index/instances",
        "arn:aws:dynamodb:eu-west-1:123456789012:table/duradyn/index/ready",
      ]],
      ["DuradynSignalQueues", "Allow", sort(jsondecode(file("${path.module}/iam_actions.json")).queues), [
        "arn:aws:sqs:eu-west-1:123456789012:duradyn-orchestrator",
        "arn:aws:sqs:eu-west-1:123456789012:duradyn-worker",
      ]],
    ])
    error_message = "Unexpected policy: ${output.iam_policy_json}"
  }
}

run "policy_with_kms" {
  command = apply

  variables {
    table_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/table-key"
    queue_kms_key_arn = "arn:aws:kms:eu-west-1:123456789012:key/queue-key"
  }

  assert {
    condition = jsonencode([for s in jsondecode(output.iam_policy_json).Statement : [
      s.Effect, sort(flatten([s.Action])), sort(flatten([s.Resource])), sort(flatten([s.Condition.StringEquals["kms:ViaService"]]))
      ] if s.Sid == "DuradynKMS"]) == jsonencode([[
      "Allow",
      ["kms:Decrypt", "kms:GenerateDataKey"],
      ["arn:aws:kms:eu-west-1:123456789012:key/queue-key", "arn:aws:kms:eu-west-1:123456789012:key/table-key"],
      ["dynamodb.eu-west-1.amazonaws.com", "sqs.eu-west-1.amazonaws.com"],
    ]])
    error_message = "Unexpected KMS statement: ${output.iam_policy_json}"
  }
}

run "policy_with_autoscaling" {
  # Its own state: the table is aws_dynamodb_table.autoscaled here.
  state_key = "autoscaling"

  variables {
    billing_mode = "PROVISIONED"
    provisioned_capacity = {
      table     = { read = 5, write = 5 }
      ready     = { read = 5, write = 5 }
      instances = { read = 5, write = 5 }
    }
    autoscaling = {
      table     = { read = { max = 50 }, write = { max = 50 } }
      ready     = { read = { max = 50 }, write = { max = 50 } }
      instances = { read = { max = 50 }, write = { max = 50 } }
    }
  }

  assert {
    condition     = length(aws_dynamodb_table.autoscaled) == 1 && output.region == "eu-west-1"
    error_message = "With autoscaling the table must be aws_dynamodb_table.autoscaled, and the region output must come from its ARN."
  }

  # Auto scaling is Terraform's business, not the process's: the policy is
  # the same as without it.
  assert {
    condition     = output.iam_policy_json == run.policy_without_kms.iam_policy_json
    error_message = "Unexpected policy with autoscaling: ${output.iam_policy_json}"
  }
}
