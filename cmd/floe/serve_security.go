package main

import (
	"flag"
	"fmt"
	"strings"
	"time"

	"github.com/floe-broker/floe/node"
)

// securityFlags are floe serve's authorization and audit flags
// (docs/security.md).
type securityFlags struct {
	authorizer      *string
	allowIfNoACL    *bool
	superUsers      *string
	auditLog        *bool
	auditAllows     *bool
	auditPartitions *int
	auditRetention  *time.Duration
	auditFile       *string
}

func addSecurityFlags(fs *flag.FlagSet) *securityFlags {
	return &securityFlags{
		authorizer:      fs.String("authorizer", node.AuthorizerNone, "none (every request is allowed) or acl (Kafka ACLs and roles)"),
		allowIfNoACL:    fs.Bool("allow-everyone-if-no-acl-found", false, "with --authorizer acl: a resource without any ACL is open to everyone (Kafka's allow.everyone.if.no.acl.found)"),
		superUsers:      fs.String("super-users", "", "principals allowed everything, `User:a;User:b` (Kafka's super.users)"),
		auditLog:        fs.Bool("audit-log", false, "record authentications, authorization denials and cluster changes in the internal topic __audit_log"),
		auditAllows:     fs.Bool("audit-log-allows", false, "also record allowed authorization decisions (one record per request and resource)"),
		auditPartitions: fs.Int("audit-log-partitions", 1, "partitions of __audit_log when it is created (each its own hash chain)"),
		auditRetention:  fs.Duration("audit-log-retention", 7*24*time.Hour, "retention of __audit_log when it is created"),
		auditFile:       fs.String("audit-log-file", "", "also append this broker's audit records to this `file`, one JSON line each"),
	}
}

func (f *securityFlags) config() (node.SecurityConfig, error) {
	c := node.SecurityConfig{
		Authorizer: *f.authorizer, AllowEveryoneIfNoACL: *f.allowIfNoACL, SuperUsers: parseSuperUsers(*f.superUsers),
		Audit: node.AuditConfig{Enabled: *f.auditLog, Allows: *f.auditAllows, Partitions: int32(*f.auditPartitions), Retention: *f.auditRetention},
	}
	if err := node.ValidateSecurityConfig(c); err != nil {
		return c, fmt.Errorf("--authorizer/--super-users: %v", err)
	}
	if *f.auditPartitions < 1 || *f.auditPartitions > 1000 {
		return c, fmt.Errorf("--audit-log-partitions must be 1 to 1000, got %d", *f.auditPartitions)
	}
	if *f.auditRetention < time.Minute {
		return c, fmt.Errorf("--audit-log-retention must be at least a minute, got %v", *f.auditRetention)
	}
	if c.Authorizer != node.AuthorizerACL && (len(c.SuperUsers) > 0 || c.AllowEveryoneIfNoACL) {
		return c, fmt.Errorf("--super-users and --allow-everyone-if-no-acl-found need --authorizer acl")
	}
	return c, nil
}

// parseSuperUsers splits "User:a;User:b" (spaces around names ignored).
func parseSuperUsers(s string) []string {
	var out []string
	for _, u := range strings.Split(s, ";") {
		if u = strings.TrimSpace(u); u != "" {
			out = append(out, u)
		}
	}
	return out
}
