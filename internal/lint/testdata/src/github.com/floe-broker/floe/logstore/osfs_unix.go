package logstore

import "syscall"

var _ = syscall.Fsync
