package metrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/push"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// MaxPrevious bounds what is read back of a previous run's metrics (a
// textfile, a bucket object, a Pushgateway's /metrics).
const MaxPrevious = 64 << 20

// Text returns the metrics of g in the Prometheus text format: what a
// textfile for node_exporter's textfile collector holds, written whole
// (a file renamed into place, or a bucket object).
func Text(g prometheus.Gatherer) ([]byte, error) {
	fams, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var b bytes.Buffer
	for _, f := range fams {
		if _, err := expfmt.MetricFamilyToText(&b, f); err != nil {
			return nil, err
		}
	}
	return b.Bytes(), nil
}

// Group is a Pushgateway's group of metrics: its job and grouping labels
// (e.g. instance), which the Pushgateway adds to every series pushed.
type Group struct {
	URL      string            // the Pushgateway, e.g. http://pushgateway:9091
	Job      string            // the job label
	Grouping map[string]string // further grouping labels
	Client   *http.Client      // nil: http.DefaultClient
}

// labels returns the labels the Pushgateway gives the group's series.
func (g Group) labels() map[string]string {
	l := map[string]string{"job": g.Job}
	for k, v := range g.Grouping {
		l[k] = v
	}
	return l
}

// baseURL is g.URL with a scheme and no trailing slash, as push.New
// takes it.
func (g Group) baseURL() string {
	u := g.URL
	if !strings.Contains(u, "://") {
		u = "http://" + u
	}
	return strings.TrimSuffix(u, "/")
}

func (g Group) client() *http.Client {
	if g.Client != nil {
		return g.Client
	}
	return http.DefaultClient
}

// Pushed reads the series the Pushgateway holds for the group (GET
// /metrics, the series whose job and grouping labels are the group's):
// the previous run's, empty when the group was never pushed. Errors are
// the request's, a status other than 200 or text that does not parse.
func (g Group) Pushed(ctx context.Context) (Previous, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.baseURL()+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := g.client().Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", req.URL.Redacted(), resp.Status)
	}
	prev, err := ParsePrevious(io.LimitReader(resp.Body, MaxPrevious), g.labels())
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", req.URL.Redacted(), err)
	}
	return prev, nil
}

// Push replaces the group's metrics on the Pushgateway with those of reg
// (HTTP PUT, push.Pusher.Push): series of an earlier run that this one
// does not have are dropped. A series label that is also a grouping label
// (a verify shard's shard) is left to the Pushgateway, which sets it from
// the group; a series whose value differs is an error.
func (g Group) Push(ctx context.Context, reg prometheus.Gatherer) error {
	gather := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		fams, err := reg.Gather()
		if err != nil {
			return nil, err
		}
		for _, f := range fams {
			for _, m := range f.GetMetric() {
				var keep []*dto.LabelPair
				for _, l := range m.GetLabel() {
					v, grouped := g.Grouping[l.GetName()]
					switch {
					case !grouped:
						keep = append(keep, l)
					case v != l.GetValue():
						return nil, fmt.Errorf("%s: label %s=%q is not the group's %q", f.GetName(), l.GetName(), l.GetValue(), v)
					}
				}
				m.Label = keep
			}
		}
		return fams, nil
	})
	p := push.New(g.baseURL(), g.Job).Gatherer(gather).Client(g.client())
	for k, v := range g.Grouping {
		p = p.Grouping(k, v)
	}
	return p.PushContext(ctx)
}
