package runtimetest

var errorTests = []Test{}
