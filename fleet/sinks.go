package fleet

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	collpb "go.opentelemetry.io/proto/slim/otlp/collector/profiles/v1development"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
)

// OTLP exports windows as OTLP profiles over HTTP (protobuf, gzipped), to an OpenTelemetry
// Collector's otlpreceiver or any backend that takes the development profiles signal.
type OTLP struct {
	// Endpoint is the URL to post to. A URL without a path gets the signal's default path
	// "/v1development/profiles" (http://collector:4318 → http://collector:4318/v1development/profiles).
	Endpoint string
	// Headers are added to every request (authentication, tenant).
	Headers map[string]string
	// Client sends the requests; nil uses a client without a timeout of its own (the agent bounds
	// each export).
	Client *http.Client
	// Version is the agent's version, for the scope and the User-Agent.
	Version string
}

// OTLPPath is the path of the OTLP/HTTP profiles endpoint while the signal is in development.
const OTLPPath = "/v1development/profiles"

// Name is "otlp".
func (o *OTLP) Name() string { return "otlp" }

// URL is where Export posts.
func (o *OTLP) URL() (string, error) {
	u, err := url.Parse(o.Endpoint)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return "", fmt.Errorf("otlp endpoint %q: want http(s)://host:port[/path]", o.Endpoint)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = OTLPPath
	}
	return u.String(), nil
}

// Export converts the windows (ToOTLP) and posts them in one request.
func (o *OTLP) Export(ctx context.Context, ws []*Window) error {
	target, err := o.URL()
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	in := make([]OTLPProfile, 0, len(ws))
	for _, w := range ws {
		p, err := w.Profile()
		if err != nil {
			return fmt.Errorf("%w: decode window of pid %d: %w", ErrRejected, w.Target.PID, err)
		}
		in = append(in, OTLPProfile{Target: w.Target, Profile: p})
	}
	req, err := ToOTLP(in, o.Version)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrRejected, err)
	}
	body, err := proto.Marshal(req)
	if err != nil {
		return fmt.Errorf("%w: encode: %w", ErrRejected, err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(body)
	_ = zw.Close()
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/x-protobuf")
	hdr.Set("Content-Encoding", "gzip")
	hdr.Set("User-Agent", "jvmkit-agent/"+o.Version+" (OTLP profiles "+OTLPProtoVersion+")")
	resp, err := post(ctx, o.Client, target, hdr, o.Headers, gz.Bytes())
	if err != nil {
		return err
	}
	var r collpb.ExportProfilesServiceResponse
	if err := proto.Unmarshal(resp, &r); err == nil && r.PartialSuccess != nil && r.PartialSuccess.RejectedProfiles > 0 {
		return fmt.Errorf("%w: %d profiles: %s", ErrRejected, r.PartialSuccess.RejectedProfiles, r.PartialSuccess.ErrorMessage)
	}
	return nil
}

// Pyroscope pushes windows to Grafana Pyroscope's ingestion API (push.v1.PusherService/Push over the
// Connect protocol, protobuf), each window a series labelled with its target's labels and
// __name__="process_cpu". The request is encoded here (protowire) rather than with Pyroscope's API
// module, to keep jvmkit's dependencies few; its messages are stable since Pyroscope 1.0.
type Pyroscope struct {
	// URL is Pyroscope's base URL (http://pyroscope:4040).
	URL string
	// Headers are added to every request (X-Scope-OrgID for a tenant, Authorization).
	Headers map[string]string
	Client  *http.Client
}

// PyroscopePushPath is the Connect path of Pyroscope's Push.
const PyroscopePushPath = "/push.v1.PusherService/Push"

// Name is "pyroscope".
func (p *Pyroscope) Name() string { return "pyroscope" }

// Export pushes the windows in one request.
func (p *Pyroscope) Export(ctx context.Context, ws []*Window) error {
	u, err := url.Parse(p.URL)
	if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") {
		return fmt.Errorf("%w: pyroscope URL %q: want http(s)://host:port", ErrRejected, p.URL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + PyroscopePushPath
	hdr := http.Header{}
	hdr.Set("Content-Type", "application/proto")
	hdr.Set("Connect-Protocol-Version", "1")
	_, err = post(ctx, p.Client, u.String(), hdr, p.Headers, PushRequest(ws))
	return err
}

// PushRequest encodes Pyroscope's push.v1.PushRequest for the windows:
//
//	PushRequest      { repeated RawProfileSeries series = 1; }
//	RawProfileSeries { repeated types.v1.LabelPair labels = 1; repeated RawSample samples = 2; }
//	LabelPair        { string name = 1; string value = 2; }
//	RawSample        { bytes raw_profile = 1; string ID = 2; }
func PushRequest(ws []*Window) []byte {
	var out []byte
	for _, w := range ws {
		labels := append([][2]string{{"__name__", "process_cpu"}}, w.Target.Labels()...)
		slices.SortFunc(labels, func(a, b [2]string) int { return strings.Compare(a[0], b[0]) })
		var series []byte
		for _, l := range labels {
			var pair []byte
			pair = protowire.AppendTag(pair, 1, protowire.BytesType)
			pair = protowire.AppendString(pair, l[0])
			pair = protowire.AppendTag(pair, 2, protowire.BytesType)
			pair = protowire.AppendString(pair, l[1])
			series = protowire.AppendTag(series, 1, protowire.BytesType)
			series = protowire.AppendBytes(series, pair)
		}
		var sample []byte
		sample = protowire.AppendTag(sample, 1, protowire.BytesType)
		sample = protowire.AppendBytes(sample, w.Pprof)
		sample = protowire.AppendTag(sample, 2, protowire.BytesType)
		sample = protowire.AppendString(sample, uuid())
		series = protowire.AppendTag(series, 2, protowire.BytesType)
		series = protowire.AppendBytes(series, sample)
		out = protowire.AppendTag(out, 1, protowire.BytesType)
		out = protowire.AppendBytes(out, series)
	}
	return out
}

// uuid is a random (version 4) UUID.
func uuid() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// post sends body and returns the response body of a 2xx answer. 4xx answers other than 408 and
// 429 wrap ErrRejected; everything else (5xx, connection errors) can be retried.
func post(ctx context.Context, c *http.Client, target string, hdr http.Header, extra map[string]string, body []byte) ([]byte, error) {
	if c == nil {
		c = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	req.Header = hdr
	for k, v := range extra {
		req.Header.Set(k, v)
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 == 2 {
		return b, nil
	}
	msg := strings.TrimSpace(string(b))
	if len(msg) > 300 {
		msg = msg[:300] + "..."
	}
	err = fmt.Errorf("POST %s: %s: %s", target, resp.Status, msg)
	if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusRequestTimeout && resp.StatusCode != http.StatusTooManyRequests {
		return nil, fmt.Errorf("%w: %w", ErrRejected, err)
	}
	return nil, err
}
