# Plans the module against a mocked AWS provider: no credentials, no network.
# Run with `terraform test` in terraform/modules/ecs-worker (scripts/tf-validate
# does).

mock_provider "aws" {
  # Mocked values are known when the plan is made, so that plans can be checked.
  override_during = plan

  mock_resource "aws_ecs_cluster" {
    defaults = {
      arn = "arn:aws:ecs:eu-west-1:123456789012:cluster/orders-ecs"
    }
  }
  mock_resource "aws_iam_role" {
    defaults = {
      arn = "arn:aws:iam::123456789012:role/orders-ecs-task"
    }
  }
  mock_data "aws_region" {
    defaults = {
      name = "eu-west-1"
    }
  }
  mock_data "aws_iam_policy_document" {
    defaults = {
      json = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
    }
  }
}

variables {
  name                   = "orders-ecs"
  image                  = "123456789012.dkr.ecr.eu-west-1.amazonaws.com/orders-worker:1"
  subnet_ids             = ["subnet-1", "subnet-2"]
  security_group_ids     = ["sg-1"]
  table_name             = "orders"
  orchestrator_queue_url = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-orchestrator"
  worker_queue_url       = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-worker"
  iam_policy_json        = "{\"Version\":\"2012-10-17\",\"Statement\":[]}"
  environment            = { WORKER_TAGS = "long" }
}

run "defaults" {
  command = plan

  assert {
    condition     = aws_ecs_task_definition.this.requires_compatibilities == toset(["FARGATE"]) && aws_ecs_task_definition.this.network_mode == "awsvpc" && aws_ecs_task_definition.this.runtime_platform[0].cpu_architecture == "ARM64"
    error_message = "The task must run on Fargate, awsvpc, ARM64 by default."
  }

  assert {
    condition = {
      for e in jsondecode(aws_ecs_task_definition.this.container_definitions)[0].environment : e.name => e.value
      } == {
      DURADYN_TABLE                  = "orders"
      DURADYN_ORCHESTRATOR_QUEUE_URL = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-orchestrator"
      DURADYN_WORKER_QUEUE_URL       = "https://sqs.eu-west-1.amazonaws.com/123456789012/orders-worker"
      AWS_REGION                     = "eu-west-1"
      WORKER_TAGS                    = "long"
    }
    error_message = "The container's environment must name the table, both queues and the region, with the extra variables."
  }

  assert {
    condition     = jsondecode(aws_ecs_task_definition.this.container_definitions)[0].logConfiguration.options["awslogs-group"] == "/ecs/orders-ecs" && jsondecode(aws_ecs_task_definition.this.container_definitions)[0].stopTimeout == 30
    error_message = "The container must log to the module's log group and get 30 s to shut down."
  }

  assert {
    condition     = aws_iam_role_policy.duradyn.policy == var.iam_policy_json && aws_iam_role_policy.duradyn.role == aws_iam_role.task.id
    error_message = "The task role must hold the duradyn policy."
  }

  assert {
    condition     = length(aws_ecs_cluster.this) == 1 && aws_ecs_service.this.cluster == "arn:aws:ecs:eu-west-1:123456789012:cluster/orders-ecs" && aws_ecs_service.this.launch_type == "FARGATE" && aws_ecs_service.this.desired_count == 1
    error_message = "The service must run one Fargate task in the cluster the module creates."
  }
}

run "existing_cluster" {
  command = plan

  variables {
    cluster_arn   = "arn:aws:ecs:eu-west-1:123456789012:cluster/shared"
    desired_count = 3
  }

  assert {
    condition     = length(aws_ecs_cluster.this) == 0 && aws_ecs_service.this.cluster == "arn:aws:ecs:eu-west-1:123456789012:cluster/shared" && aws_ecs_service.this.desired_count == 3
    error_message = "With cluster_arn the service runs there and no cluster is created."
  }
}
