terraform {
  # 1.9: variable validations refer to other variables (the function's
  # timeout is checked against the queues' visibility timeout).
  required_version = ">= 1.9"

  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = ">= 5.0, < 7.0"
    }
  }
}
