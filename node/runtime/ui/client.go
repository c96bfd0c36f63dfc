package ui

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"
)

// client builds the Kafka client of one HTTP request, authenticated as the
// session's user when the listener uses SASL. The caller closes it.
func (s *Server) client(sess *session, extra ...kgo.Opt) (*kgo.Client, error) {
	opts := []kgo.Opt{
		kgo.SeedBrokers(s.cfg.Addr),
		kgo.ClientID("floe-ui"),
		kgo.Dialer(s.dial),
		kgo.RequestRetries(2),
		kgo.RetryTimeout(5 * time.Second),
		kgo.MetadataMinAge(250 * time.Millisecond),
	}
	switch s.cfg.SASLMechanism {
	case "":
	case "PLAIN":
		opts = append(opts, kgo.SASL(plain.Auth{User: sess.user, Pass: sess.pass}.AsMechanism()))
	case "SCRAM-SHA-256":
		opts = append(opts, kgo.SASL(scram.Auth{User: sess.user, Pass: sess.pass}.AsSha256Mechanism()))
	case "SCRAM-SHA-512":
		opts = append(opts, kgo.SASL(scram.Auth{User: sess.user, Pass: sess.pass}.AsSha512Mechanism()))
	default:
		return nil, errors.New("unsupported SASL mechanism " + s.cfg.SASLMechanism)
	}
	return kgo.NewClient(append(opts, extra...)...)
}

// dial sends this broker's advertised address to the bound one and every
// other address where it says, with TLS when the listener has it.
func (s *Server) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	target := addr
	if addr == s.cfg.Advertised {
		target = s.cfg.Addr
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, network, target)
	if err != nil || s.cfg.TLS == nil {
		return conn, err
	}
	host, _, _ := net.SplitHostPort(addr)
	tc := tls.Client(conn, s.cfg.TLS(host))
	if err := tc.HandshakeContext(ctx); err != nil {
		conn.Close()
		return nil, err
	}
	return tc, nil
}

// admin runs fn with an admin client of the session, bounded by the
// request timeout.
func (s *Server) admin(r *http.Request, sess *session, fn func(ctx context.Context, adm *kadm.Client) error) error {
	return s.kafka(r, sess, func(ctx context.Context, _ *kgo.Client, adm *kadm.Client) error { return fn(ctx, adm) })
}

// kafka is admin with the underlying client too (for requests kadm does
// not wrap).
func (s *Server) kafka(r *http.Request, sess *session, fn func(ctx context.Context, cl *kgo.Client, adm *kadm.Client) error) error {
	cl, err := s.client(sess)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	return fn(ctx, cl, kadm.NewClient(cl))
}

// classify maps an error to the HTTP status the UI answers and a message:
// the broker's authorization errors are 403, as the Kafka API's are
// refusals.
func classify(err error) (int, string) {
	var ke *kerr.Error
	switch {
	case err == nil:
		return http.StatusOK, ""
	case isBadInput(err):
		return http.StatusBadRequest, err.Error()
	case errors.Is(err, kerr.SaslAuthenticationFailed), errors.Is(err, kerr.IllegalSaslState),
		errors.Is(err, kerr.UnsupportedSaslMechanism):
		return http.StatusUnauthorized, err.Error()
	case errors.Is(err, kerr.TopicAuthorizationFailed), errors.Is(err, kerr.GroupAuthorizationFailed),
		errors.Is(err, kerr.ClusterAuthorizationFailed), errors.Is(err, kerr.TransactionalIDAuthorizationFailed),
		errors.Is(err, kerr.DelegationTokenAuthorizationFailed):
		return http.StatusForbidden, "not authorized: " + err.Error()
	case errors.Is(err, kerr.UnknownTopicOrPartition), errors.Is(err, kerr.GroupIDNotFound), errors.Is(err, kerr.UnknownTopicID):
		return http.StatusNotFound, err.Error()
	case errors.Is(err, kerr.TopicAlreadyExists), errors.Is(err, kerr.NonEmptyGroup):
		return http.StatusConflict, err.Error()
	case errors.Is(err, errNoRaftSource):
		return http.StatusServiceUnavailable, err.Error()
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, kerr.RequestTimedOut):
		return http.StatusGatewayTimeout, "the broker did not answer in time: " + err.Error()
	case errors.As(err, &ke) && !ke.Retriable:
		// INVALID_TOPIC_EXCEPTION, INVALID_PARTITIONS, INVALID_CONFIG,
		// POLICY_VIOLATION...: the request was wrong.
		return http.StatusBadRequest, err.Error()
	default:
		return http.StatusBadGateway, err.Error()
	}
}

// sortedOffsets lists offsets by topic, then partition.
func sortedOffsets(lo kadm.ListedOffsets) []kadm.ListedOffset {
	var out []kadm.ListedOffset
	lo.Each(func(o kadm.ListedOffset) { out = append(out, o) })
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out
}
