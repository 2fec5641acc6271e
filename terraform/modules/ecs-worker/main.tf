################################################################################
# Long-running duradyn workers on ECS Fargate: the task definition, the
# service, the task role (the duradyn policy), the execution role and the
# log group. Each task is a process that runs durable.Runtime.Run until ECS
# stops it (SIGTERM, then stop_timeout). docs/lambda.md shows the split with
# a Lambda function: orchestrations and short activities on Lambda, an
# activity with a tag of its own on these tasks.
################################################################################

data "aws_region" "this" {}

locals {
  cluster_arn = var.cluster_arn != null ? var.cluster_arn : aws_ecs_cluster.this[0].arn
}

resource "aws_ecs_cluster" "this" {
  count = var.cluster_arn == null ? 1 : 0

  name = var.name
  tags = var.tags
}

resource "aws_cloudwatch_log_group" "this" {
  name              = "/ecs/${var.name}"
  retention_in_days = var.log_retention_days
  tags              = var.tags
}

data "aws_iam_policy_document" "assume_tasks" {
  statement {
    actions = ["sts:AssumeRole"]
    principals {
      type        = "Service"
      identifiers = ["ecs-tasks.amazonaws.com"]
    }
  }
}

# The task role: what the worker's code may call.
resource "aws_iam_role" "task" {
  name               = "${var.name}-task"
  assume_role_policy = data.aws_iam_policy_document.assume_tasks.json
  tags               = var.tags
}

resource "aws_iam_role_policy" "duradyn" {
  name   = "duradyn"
  role   = aws_iam_role.task.id
  policy = var.iam_policy_json
}

# The execution role: what ECS needs to start the task (pull the image,
# write the logs).
resource "aws_iam_role" "execution" {
  name               = "${var.name}-execution"
  assume_role_policy = data.aws_iam_policy_document.assume_tasks.json
  tags               = var.tags
}

resource "aws_iam_role_policy_attachment" "execution" {
  role       = aws_iam_role.execution.name
  policy_arn = "arn:aws:iam::aws:policy/service-role/AmazonECSTaskExecutionRolePolicy"
}

resource "aws_ecs_task_definition" "this" {
  family                   = var.name
  requires_compatibilities = ["FARGATE"]
  network_mode             = "awsvpc"
  cpu                      = var.cpu
  memory                   = var.memory
  task_role_arn            = aws_iam_role.task.arn
  execution_role_arn       = aws_iam_role.execution.arn

  runtime_platform {
    operating_system_family = "LINUX"
    cpu_architecture        = var.cpu_architecture
  }

  container_definitions = jsonencode([{
    name        = "worker"
    image       = var.image
    essential   = true
    stopTimeout = var.stop_timeout
    environment = [for k, v in merge(var.environment, {
      DURADYN_TABLE                  = var.table_name
      DURADYN_ORCHESTRATOR_QUEUE_URL = var.orchestrator_queue_url
      DURADYN_WORKER_QUEUE_URL       = var.worker_queue_url
      AWS_REGION                     = data.aws_region.this.name
    }) : { name = k, value = v }]
    logConfiguration = {
      logDriver = "awslogs"
      options = {
        awslogs-group         = aws_cloudwatch_log_group.this.name
        awslogs-region        = data.aws_region.this.name
        awslogs-stream-prefix = "worker"
      }
    }
  }])

  tags = var.tags
}

resource "aws_ecs_service" "this" {
  name            = var.name
  cluster         = local.cluster_arn
  task_definition = aws_ecs_task_definition.this.arn
  desired_count   = var.desired_count
  launch_type     = "FARGATE"

  # A new task starts before an old one stops: the old one finishes its
  # turns and abandons its activities within stop_timeout, and leases
  # carry the rest over (no work is lost either way).
  deployment_minimum_healthy_percent = 100
  deployment_maximum_percent         = 200

  network_configuration {
    subnets          = var.subnet_ids
    security_groups  = var.security_group_ids
    assign_public_ip = var.assign_public_ip
  }

  tags = var.tags
}
