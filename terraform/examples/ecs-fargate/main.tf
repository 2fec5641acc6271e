# Long-running duradyn workers on ECS Fargate: the table and the two signal
# queues (the duradyn module), and a service whose tasks run the worker
# image (the ecs-worker module), polling the queues themselves.
#
#   terraform init
#   terraform apply -var region=eu-west-1 -var image=... -var 'subnet_ids=[...]' -var 'security_group_ids=[...]'

provider "aws" {
  region = var.region
}

module "duradyn" {
  source = "../../"

  table_name = var.name

  # An example should be easy to destroy; keep the default (true) in
  # production.
  deletion_protection_enabled = false

  tags = {
    Project = "duradyn-ecs-example"
  }
}

module "workers" {
  source = "../../modules/ecs-worker"

  name                   = "${var.name}-workers"
  image                  = var.image
  desired_count          = var.desired_count
  subnet_ids             = var.subnet_ids
  security_group_ids     = var.security_group_ids
  table_name             = module.duradyn.table_name
  orchestrator_queue_url = module.duradyn.orchestrator_queue_url
  worker_queue_url       = module.duradyn.worker_queue_url
  iam_policy_json        = module.duradyn.iam_policy_json

  tags = {
    Project = "duradyn-ecs-example"
  }
}
