package runtimetest

var samplesTests = []Test{}
