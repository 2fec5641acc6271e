package runtimetest

var systemCallTests = []Test{}
