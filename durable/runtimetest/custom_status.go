package runtimetest

var customStatusTests = []Test{}
