package main

import (
	"golang.org/x/tools/go/analysis/singlechecker"

	"github.com/floe-broker/floe/internal/lint"
)

func main() { singlechecker.Main(lint.Determinism) }
