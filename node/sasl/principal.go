package sasl

import (
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"
)

// PrincipalMapper turns a TLS client certificate's subject into a principal
// with Kafka's ssl.principal.mapping.rules: a comma-separated list of
// "RULE:pattern/replacement/[L|U]" and "DEFAULT", tried in order. A RULE
// applies when its pattern matches the whole distinguished name; the
// replacement ($1, $2 for groups) becomes the user name, lower- or
// upper-cased with L or U. DEFAULT keeps the whole name. The principal is
// "User:<name>". No rule applying is an error (Kafka then fails the
// connection); the default rule list is "DEFAULT".
type PrincipalMapper struct {
	rules []mappingRule
}

type mappingRule struct {
	isDefault   bool
	pattern     *regexp.Regexp
	replacement string
	toLower     bool
	toUpper     bool
}

// ParsePrincipalMappingRules parses ssl.principal.mapping.rules; "" means
// "DEFAULT".
func ParsePrincipalMappingRules(s string) (*PrincipalMapper, error) {
	m := &PrincipalMapper{}
	rest := strings.TrimSpace(s)
	if rest == "" {
		rest = "DEFAULT"
	}
	for rest != "" {
		var r mappingRule
		var err error
		switch {
		case strings.HasPrefix(rest, "DEFAULT"):
			r.isDefault = true
			rest = rest[len("DEFAULT"):]
		case strings.HasPrefix(rest, "RULE:"):
			r, rest, err = parseRule(rest[len("RULE:"):])
			if err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("principal mapping rules: %q: want RULE:pattern/replacement/[LU] or DEFAULT", cut(rest))
		}
		m.rules = append(m.rules, r)
		rest = strings.TrimLeft(rest, " \t")
		if rest == "" {
			break
		}
		if rest[0] != ',' && rest[0] != '\n' {
			return nil, fmt.Errorf("principal mapping rules: unexpected %q after a rule", cut(rest))
		}
		rest = strings.TrimSpace(rest[1:])
	}
	return m, nil
}

func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "..."
	}
	return s
}

// parseRule reads "pattern/replacement/[LU]" (a slash inside either part is
// escaped as \/) and returns the rest of the list.
func parseRule(s string) (mappingRule, string, error) {
	pattern, s, ok := untilSlash(s)
	if !ok {
		return mappingRule{}, "", fmt.Errorf("principal mapping rules: RULE:%s: missing '/' after the pattern", cut(pattern))
	}
	repl, s, ok := untilSlash(s)
	if !ok {
		return mappingRule{}, "", fmt.Errorf("principal mapping rules: RULE:%s/%s: missing '/' after the replacement", cut(pattern), cut(repl))
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return mappingRule{}, "", fmt.Errorf("principal mapping rules: pattern %q: %v", pattern, err)
	}
	r := mappingRule{pattern: re, replacement: javaReplacement(repl)}
	if s != "" && (s[0] == 'L' || s[0] == 'U') {
		r.toLower, r.toUpper = s[0] == 'L', s[0] == 'U'
		s = s[1:]
	}
	return r, s, nil
}

// untilSlash reads up to the first unescaped '/', unescaping "\/".
func untilSlash(s string) (part, rest string, ok bool) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch {
		case s[i] == '\\' && i+1 < len(s) && s[i+1] == '/':
			b.WriteByte('/')
			i++
		case s[i] == '/':
			return b.String(), s[i+1:], true
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), "", false
}

// javaReplacement rewrites Java's $1 group references to Go's ${1}, so
// "$1x" means group 1 then x, as in Java.
func javaReplacement(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '$' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9' {
			j := i + 1
			for j < len(s) && s[j] >= '0' && s[j] <= '9' {
				j++
			}
			b.WriteString("${" + s[i+1:j] + "}")
			i = j - 1
			continue
		}
		if s[i] == '$' {
			b.WriteString("$$")
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// Map returns the principal for a distinguished name.
func (m *PrincipalMapper) Map(dn string) (string, error) {
	for _, r := range m.rules {
		if r.isDefault {
			return UserPrincipal(dn), nil
		}
		loc := r.pattern.FindStringIndex(dn)
		if loc == nil || loc[0] != 0 || loc[1] != len(dn) {
			continue
		}
		name := r.pattern.ReplaceAllString(dn, r.replacement)
		switch {
		case r.toLower:
			name = strings.ToLower(name)
		case r.toUpper:
			name = strings.ToUpper(name)
		}
		return UserPrincipal(name), nil
	}
	return "", fmt.Errorf("no principal mapping rule matches the certificate subject %q", dn)
}

// MapCertificate maps a certificate's subject (see DistinguishedName).
func (m *PrincipalMapper) MapCertificate(c *x509.Certificate) (string, error) {
	return m.Map(DistinguishedName(c))
}

// DistinguishedName renders a certificate's subject as Java's
// X500Principal.getName() does (RFC 2253): the subject's own order
// reversed, most specific first ("CN=alice,OU=eng,O=Acme,C=US"), with
// Java's attribute keywords and the others as dotted OIDs with a #hex
// value, so Kafka's mapping rules apply unchanged.
func DistinguishedName(c *x509.Certificate) string {
	var seq pkix.RDNSequence
	if rest, err := asn1.Unmarshal(c.RawSubject, &seq); err != nil || len(rest) > 0 {
		return c.Subject.String()
	}
	var parts []string
	for i := len(seq) - 1; i >= 0; i-- {
		var attrs []string
		for _, atv := range seq[i] {
			attrs = append(attrs, formatAttribute(atv))
		}
		parts = append(parts, strings.Join(attrs, "+"))
	}
	return strings.Join(parts, ",")
}

// javaKeywords are the attribute keywords X500Principal's RFC 2253 form
// uses.
var javaKeywords = map[string]string{
	"2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.9": "STREET",
	"2.5.4.10": "O", "2.5.4.11": "OU", "0.9.2342.19200300.100.1.25": "DC", "0.9.2342.19200300.100.1.1": "UID",
}

func formatAttribute(atv pkix.AttributeTypeAndValue) string {
	oid := atv.Type.String()
	if kw, ok := javaKeywords[oid]; ok {
		if s, ok := atv.Value.(string); ok {
			return kw + "=" + escapeDNValue(s)
		}
	}
	der, err := asn1.Marshal(atv.Value)
	if err != nil {
		return oid + "="
	}
	return oid + "=#" + hex.EncodeToString(der)
}

// escapeDNValue escapes an attribute value as RFC 2253 section 2.4 asks.
func escapeDNValue(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		special := strings.IndexByte(`,+"\<>;`, c) >= 0 ||
			(i == 0 && (c == ' ' || c == '#')) || (i == len(s)-1 && c == ' ')
		if special {
			b.WriteByte('\\')
		}
		b.WriteByte(c)
	}
	return b.String()
}
