package kafka

import (
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

type wrapped struct{ kmsg.Response }

func (w wrapped) Unwrap() kmsg.Response { return w.Response }

func TestThrottleAfter(t *testing.T) {
	p := kmsg.NewPtrProduceResponse()
	p.ThrottleMillis = 250
	for _, c := range []struct {
		version int16
		resp    func(kmsg.Response) kmsg.Response
		want    time.Duration
	}{
		{7, func(r kmsg.Response) kmsg.Response { return r }, 250 * time.Millisecond},
		{7, func(r kmsg.Response) kmsg.Response { return wrapped{r} }, 250 * time.Millisecond},
		{5, func(r kmsg.Response) kmsg.Response { return r }, 0}, // before KIP-219: no mute
	} {
		p.Version = c.version
		if got := ThrottleAfter(c.resp(p)); got != c.want {
			t.Errorf("v%d: %v, want %v", c.version, got, c.want)
		}
	}
	if ThrottleAfter(nil) != 0 || ThrottleAfter(kmsg.NewPtrMetadataResponse()) != 0 {
		t.Error("a response without a throttle mutes")
	}
}

// A response throttled after it is sent (KIP-219) leaves at once, and the
// server reads nothing more from that connection until the throttle time
// has passed.
func TestThrottledResponseMutesConnection(t *testing.T) {
	const throttle = 300 * time.Millisecond
	var mu sync.Mutex
	var answered []time.Time // when each produce was answered
	var served []time.Time   // when each produce reached the handler
	h := HandlerFunc(func(c *ConnInfo, req kmsg.Request, respond func(kmsg.Response)) {
		resp := req.ResponseKind().(*kmsg.ProduceResponse)
		resp.Version = req.GetVersion()
		resp.ThrottleMillis = int32(throttle / time.Millisecond)
		mu.Lock()
		served = append(served, time.Now())
		answered = append(answered, time.Now())
		mu.Unlock()
		respond(resp)
	})
	_, addr := startServer(t, Config{Versions: []ApiRange{{Key: 0, MinVersion: 0, MaxVersion: 9}}}, h)
	c := dialRaw(t, addr)
	for i := 0; i < 2; i++ {
		req := kmsg.NewPtrProduceRequest()
		req.Version, req.Acks, req.TimeoutMillis = 7, 1, 1000
		corr := c.send(req)
		resp := kmsg.NewPtrProduceResponse()
		resp.Version = 7
		c.readInto(corr, resp)
		if resp.ThrottleMillis != int32(throttle/time.Millisecond) {
			t.Fatalf("throttle %d ms in the response", resp.ThrottleMillis)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if gap := served[1].Sub(answered[0]); gap < throttle {
		t.Fatalf("the second request was read %v after the first was answered with a %v throttle", gap, throttle)
	}
}
