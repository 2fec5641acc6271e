// Package goworkflows runs the benchmark scenarios on go-workflows
// (github.com/cschleiden/go-workflows), the peer system measured in the
// same run as duradyn.
//
// Each run builds a fresh backend ("monoprocess", "sqlite-memory",
// "sqlite-file" or "redis"), starts a worker and a client in this process as
// go-workflows' own benchmark does, runs the scenario, checks every
// workflow's output and returns a report.Result. A workflow instance counts
// as completed when the worker has committed its finishing workflow task
// to the backend, the same point duradyn's side measures (the commit of the
// terminal turn); no polling client adds load to the backend while the
// scenario runs.
//
// StartRedis starts a private redis-server for the "redis" backend.
package goworkflows
