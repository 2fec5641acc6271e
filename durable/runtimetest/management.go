package runtimetest

var managementTests = []Test{}
