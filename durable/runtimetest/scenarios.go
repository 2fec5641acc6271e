package runtimetest

var scenarioTests = []Test{}
