package runtimetest

var externalEventTests = []Test{}
