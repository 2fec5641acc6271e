package runtimetest

var timerTests = []Test{}
