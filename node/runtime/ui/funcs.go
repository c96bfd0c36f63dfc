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
	"resetFields": func(idPrefix string, f resetForm) resetFields {
		return resetFields{resetForm: f, P: idPrefix}
	},
}

// resetFields is what the "reset-fields" template (layout.html) takes: an
// offset reset form and the prefix of its fields' ids, so that the group
// and share group pages share the fields and keep their own ids.
type resetFields struct {
	resetForm
	P string
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
