package admin

import "os"

var _ = os.Getenv
