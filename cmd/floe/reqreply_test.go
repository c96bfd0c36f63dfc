package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestRequestReplyFlagErrors: bad values of the request/reply flags are
// usage errors, given before any broker is contacted.
func TestRequestReplyFlagErrors(t *testing.T) {
	var out, errOut bytes.Buffer
	err := requestMain(context.Background(), []string{"rpc", "--reply-topic", "inbox", "--isolation-level", "serializable"},
		strings.NewReader(""), &out, &errOut)
	if err == nil || !strings.Contains(err.Error(), "--isolation-level") {
		t.Errorf("floe request --isolation-level serializable: %v", err)
	}
	for _, args := range [][]string{
		{"rpc", "--group", "g", "--session-timeout", "0s"},
		{"rpc", "--group", "g", "--count", "-1"},
	} {
		if err := replyMain(context.Background(), args); err == nil || !strings.Contains(err.Error(), args[3]) {
			t.Errorf("floe reply %v: %v", args, err)
		}
	}
	if _, err := parseLevels("1,0"); err == nil {
		t.Error("floe bench rr --concurrency 1,0: accepted")
	}
}
