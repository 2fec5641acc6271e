package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/dynoxide/dynoxide/cmd/durablevet/determinism"
)

func main() {
	singlechecker.Main(determinism.Analyzer)
}
