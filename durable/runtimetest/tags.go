package runtimetest

var tagTests = []Test{}
