package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/duradyn/duradyn/cmd/durablevet/determinism"
)

func main() {
	singlechecker.Main(determinism.Analyzer)
}
