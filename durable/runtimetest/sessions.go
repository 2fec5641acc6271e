package runtimetest

var sessionTests = []Test{}
