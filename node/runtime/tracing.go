package runtime

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
)

// tracer is the broker's OpenTelemetry tracer. The Broker holds nil when
// tracing is off, and then the request path does nothing but that nil test
// (tracing_request.go).
type tracer struct {
	tp *sdktrace.TracerProvider
	t  trace.Tracer
}

// tracingSettings is what the OTEL_* environment variables ask for.
type tracingSettings struct {
	on       bool
	protocol string // "http/protobuf" or "grpc"
	sampler  sdktrace.Sampler
}

// Off by default: tracing starts only when OTEL_TRACES_EXPORTER=otlp, or
// when an OTLP endpoint is set and OTEL_TRACES_EXPORTER is not "none". A
// value Floe does not support is an error (the broker refuses to start)
// rather than silently no traces.
func parseTracingEnv(getenv func(string) string) (tracingSettings, error) {
	var s tracingSettings
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") {
		return s, nil
	}
	switch exp := strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")); exp {
	case "none":
		return s, nil
	case "otlp":
		s.on = true
	case "":
		s.on = getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
	default:
		return s, fmt.Errorf("OTEL_TRACES_EXPORTER=%q: Floe exports traces with otlp only (or none)", exp)
	}
	if !s.on {
		return s, nil
	}
	s.protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"))
	if s.protocol == "" {
		s.protocol = strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_PROTOCOL"))
	}
	switch s.protocol {
	case "", "http/protobuf":
		s.protocol = "http/protobuf"
	case "grpc":
	default:
		return s, fmt.Errorf("OTEL_EXPORTER_OTLP_PROTOCOL=%q: Floe speaks http/protobuf or grpc", s.protocol)
	}
	var err error
	s.sampler, err = parseSampler(strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER")), strings.TrimSpace(getenv("OTEL_TRACES_SAMPLER_ARG")))
	return s, err
}

// parseSampler reads OTEL_TRACES_SAMPLER and its argument as the
// OpenTelemetry specification defines them; the default is
// parentbased_always_on.
func parseSampler(name, arg string) (sdktrace.Sampler, error) {
	ratio := func() (float64, error) {
		if arg == "" {
			return 1, nil
		}
		f, err := strconv.ParseFloat(arg, 64)
		if err != nil || f < 0 || f > 1 {
			return 0, fmt.Errorf("OTEL_TRACES_SAMPLER_ARG=%q: want a ratio from 0 to 1", arg)
		}
		return f, nil
	}
	switch name {
	case "", "parentbased_always_on":
		return sdktrace.ParentBased(sdktrace.AlwaysSample()), nil
	case "always_on":
		return sdktrace.AlwaysSample(), nil
	case "always_off":
		return sdktrace.NeverSample(), nil
	case "parentbased_always_off":
		return sdktrace.ParentBased(sdktrace.NeverSample()), nil
	case "traceidratio", "parentbased_traceidratio":
		f, err := ratio()
		if err != nil {
			return nil, err
		}
		if name == "traceidratio" {
			return sdktrace.TraceIDRatioBased(f), nil
		}
		return sdktrace.ParentBased(sdktrace.TraceIDRatioBased(f)), nil
	}
	return nil, fmt.Errorf("OTEL_TRACES_SAMPLER=%q: not a sampler Floe knows (always_on, always_off, traceidratio, parentbased_*)", name)
}

// newTracer starts the exporter and the tracer provider the environment
// asks for, or returns nil when tracing is off. Endpoint, headers, TLS
// and timeouts come from the OTEL_EXPORTER_OTLP_* variables, read by the
// exporter itself; the service name and resource attributes from
// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES (default service name
// "floe"); batching from OTEL_BSP_*.
func newTracer(getenv func(string) string, nodeID int32) (*tracer, error) {
	s, err := parseTracingEnv(getenv)
	if err != nil || !s.on {
		return nil, err
	}
	ctx := context.Background()
	var exp sdktrace.SpanExporter
	if s.protocol == "grpc" {
		exp, err = otlptracegrpc.New(ctx)
	} else {
		exp, err = otlptracehttp.New(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("tracing: OTLP exporter: %w", err)
	}
	res, err := resource.New(ctx,
		resource.WithAttributes(attribute.String("service.name", "floe"),
			attribute.String("service.instance.id", strconv.Itoa(int(nodeID)))),
		resource.WithTelemetrySDK(),
		resource.WithFromEnv())
	if err != nil && !errors.Is(err, resource.ErrPartialResource) {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res), sdktrace.WithSampler(s.sampler))
	return &tracer{tp: tp, t: tp.Tracer("github.com/floe-broker/floe/node/runtime")}, nil
}

// shutdown exports the spans still queued, within ctx.
func (t *tracer) shutdown(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.Shutdown(ctx)
}

// tracerShutdownTimeout bounds the final export at broker shutdown.
const tracerShutdownTimeout = 5 * time.Second
