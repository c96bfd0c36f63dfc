// Package acl is Floe's authorizer: Kafka's ACL model, evaluated exactly as
// Kafka's StandardAuthorizer does, plus roles.
//
// A Binding is one ACL: a resource pattern (type, name, LITERAL or
// PREFIXED) and an entry (principal, host, operation, ALLOW or DENY). An
// Index holds a set of bindings keyed by resource type and name, with the
// prefixed names grouped by length, so a decision looks at the bindings of
// the resource's own name, of the literal "*", and of each prefix length
// present — never at every ACL. Authorizer.Authorize applies Kafka's rules:
//
//  1. super users are allowed everything;
//  2. the bindings that apply are those whose pattern matches the resource
//     (the same literal name, the literal "*", or a prefix of the name) and
//     whose principal is the caller, "User:*", or one of the caller's roles
//     ("Role:NAME"), and whose host is the caller's address or "*";
//  3. an operation matches ALL or itself; an ALLOW of READ, WRITE, DELETE
//     or ALTER also allows DESCRIBE, and an ALLOW of ALTER_CONFIGS allows
//     DESCRIBE_CONFIGS (never a DENY: a DENY of READ does not deny
//     DESCRIBE);
//  4. a matching DENY wins over any ALLOW;
//  5. with no matching binding, the caller is denied if the resource has any
//     binding at all (for anyone), and otherwise allowed only when
//     AllowIfNoACL (allow.everyone.if.no.acl.found) is set.
//
// Roles: a role is a name; the principals bound to it are its members. Its
// grants are ordinary bindings whose principal is "Role:NAME", evaluated as
// if the member held them (so a DENY bound to a role denies its members).
// The built-in roles (Builtin) grant fixed ALLOW bindings defined in this
// package; they are not stored and do not count as bindings on a resource
// for rule 5, so binding someone to a built-in role never takes
// allow.everyone.if.no.acl.found away from everyone else.
//
// Everything here is pure and deterministic: no I/O, no clock, sorted
// iteration only. The controller stores the bindings (node/controller), the
// node builds the Index when they change and asks it per request.
package acl
