package runtimetest

var retryTests = []Test{}
