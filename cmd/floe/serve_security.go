package main

import (
	"flag"
	"fmt"
	"time"

	"github.com/floe-broker/floe/node"
)

// authzFlags are floe serve's authorization and audit flags (the
// authentication flags, and --super-users, are in security_flags.go)
// (docs/security.md).
type authzFlags struct {
	authorizer      *string
	allowIfNoACL    *bool
	auditLog        *bool
	auditAllows     *bool
	auditPartitions *int
	auditRetention  *time.Duration
	auditFile       *string
}

func addAuthzFlags(fs *flag.FlagSet) *authzFlags {
	return &authzFlags{
		authorizer:      fs.String("authorizer", node.AuthorizerNone, "none (every request is allowed) or acl (Kafka ACLs and roles)"),
		allowIfNoACL:    fs.Bool("allow-everyone-if-no-acl-found", false, "with --authorizer acl: a resource without any ACL is open to everyone (Kafka's allow.everyone.if.no.acl.found)"),
		auditLog:        fs.Bool("audit-log", false, "record authentications, authorization denials and cluster changes in the internal topic __audit_log"),
		auditAllows:     fs.Bool("audit-log-allows", false, "also record allowed authorization decisions (one record per request and resource)"),
		auditPartitions: fs.Int("audit-log-partitions", 1, "partitions of __audit_log when it is created (each its own hash chain)"),
		auditRetention:  fs.Duration("audit-log-retention", 7*24*time.Hour, "retention of __audit_log when it is created"),
		auditFile:       fs.String("audit-log-file", "", "also append this broker's audit records to this `file`, one JSON line each"),
	}
}

func (f *authzFlags) config(superUsers []string) (node.SecurityConfig, error) {
	c := node.SecurityConfig{
		Authorizer: *f.authorizer, AllowEveryoneIfNoACL: *f.allowIfNoACL, SuperUsers: superUsers,
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
	return c, nil
}
