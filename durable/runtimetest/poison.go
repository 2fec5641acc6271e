package runtimetest

var poisonTests = []Test{}
