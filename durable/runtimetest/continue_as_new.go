package runtimetest

var continueAsNewTests = []Test{}
