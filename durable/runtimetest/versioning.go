package runtimetest

var versioningTests = []Test{}
