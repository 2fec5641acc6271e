package runtimetest

var compositionTests = []Test{}
