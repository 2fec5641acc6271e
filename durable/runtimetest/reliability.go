package runtimetest

var reliabilityTests = []Test{}
