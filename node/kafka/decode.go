package kafka

import (
	"fmt"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// A request frame, after its int32 size prefix:
//
//	int16   api_key
//	int16   api_version
//	int32   correlation_id
//	string  client_id       nullable, classic int16 length, even when the
//	                        request is flexible (clients send it before they
//	                        know the broker's versions)
//	tags                    only when the request version is flexible
//	body                    kmsg decodes it
//
// The version is checked against the advertised table before anything
// past the first 8 bytes is read.

// requestHeaderBytesMin is the fixed part of every request header.
const requestHeaderBytesMin = 8

// request is a decoded request frame.
type request struct {
	key, version int16
	corr         int32
	clientID     *string
	// kreq is the decoded body; nil for an ApiVersions request newer than
	// the server serves, which is answered without decoding it.
	kreq kmsg.Request
}

// protocolError is a frame the server cannot serve: the connection closes.
type protocolError struct {
	reason CloseReason
	// key and version are the header's values when known to be in range
	// (for metrics), else -1.
	key, version int16
	msg          string
}

func (e *protocolError) Error() string { return fmt.Sprintf("%s: %s", e.reason, e.msg) }

// decodeRequest parses one frame (without its size prefix). It never
// panics and never decodes a body whose key and version t does not
// advertise; an ApiVersions request newer than served returns kreq nil so
// the caller answers with the v0 error response.
func decodeRequest(frame []byte, t *versionTable) (request, error) {
	if len(frame) < requestHeaderBytesMin {
		return request{}, &protocolError{ReasonBadRequest, -1, -1, fmt.Sprintf("%d-byte frame is shorter than a request header", len(frame))}
	}
	r := kbin.Reader{Src: frame}
	req := request{key: r.Int16(), version: r.Int16(), corr: r.Int32()}
	vr := t.lookup(req.key)
	if !vr.advertised {
		return req, &protocolError{ReasonUnsupportedAPI, -1, -1, fmt.Sprintf("api key %d is not served", req.key)}
	}
	if req.key == apiVersionsKey && req.version > vr.max {
		return req, nil // answered with v0 UNSUPPORTED_VERSION; body unread
	}
	if req.version < vr.min || req.version > vr.max {
		return req, &protocolError{ReasonUnsupportedVersion, req.key, -1,
			fmt.Sprintf("%s v%d is outside the advertised v%d-v%d", kmsg.NameForKey(req.key), req.version, vr.min, vr.max)}
	}
	kreq := kmsg.RequestForKey(req.key)
	kreq.SetVersion(req.version)
	req.clientID = r.NullableString()
	if kreq.IsFlexible() {
		kmsg.SkipTags(&r)
	}
	if !r.Ok() {
		return req, &protocolError{ReasonBadRequest, req.key, req.version, "request header is truncated"}
	}
	if err := kreq.ReadFrom(r.Src); err != nil {
		return req, &protocolError{ReasonBadRequest, req.key, req.version,
			fmt.Sprintf("%s v%d body: %v", kmsg.NameForKey(req.key), req.version, err)}
	}
	req.kreq = kreq
	return req, nil
}
