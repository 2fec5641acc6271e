package runtimetest

var cancellationTests = []Test{}
