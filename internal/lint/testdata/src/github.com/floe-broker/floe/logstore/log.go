package logstore

import "os" // want `import of "os" in core package`

var _ = os.Getpid
