package ui

import (
	"fmt"
	"html/template"
	"net/url"
	"strings"
)

var funcs = template.FuncMap{
	"ids":     ids,
	"u64s":    u64s,
	"inc":     func(n int) int { return n + 1 },
	"dlq":     dlqOf,
	"pathesc": url.PathEscape,
	"list":    func(xs ...string) []string { return xs },
	"ago":     agoMs,
}

// ids formats replica lists: [1 2 3] as "1, 2, 3".
func ids(xs []int32) string {
	parts := make([]string, len(xs))
	for i, x := range xs {
		parts[i] = fmt.Sprint(x)
	}
	return strings.Join(parts, ", ")
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
