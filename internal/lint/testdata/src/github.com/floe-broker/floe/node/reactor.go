package node

func start() { go func() {}() } // want `go statement in core package`
