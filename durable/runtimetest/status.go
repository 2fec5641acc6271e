package runtimetest

var statusTests = []Test{}
