package runtimetest

var kvTests = []Test{}
