package runtimetest

var nondeterminismTests = []Test{}
