package metrics

import (
	"io"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Previous is the series a previous run left, by metric name: what a run
// carries over (the last-success times). The zero value has none.
type Previous map[string][]*dto.Metric

// ParsePrevious reads metrics in the Prometheus text format (a textfile,
// a Pushgateway's /metrics) and keeps the series whose labels include
// every pair of match (nil: all of them). It returns the parser's error
// for text that is not that format.
func ParsePrevious(r io.Reader, match map[string]string) (Previous, error) {
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, err
	}
	prev := Previous{}
	for name, fam := range fams {
		for _, m := range fam.GetMetric() {
			if hasLabels(m, match) {
				prev[name] = append(prev[name], m)
			}
		}
	}
	return prev, nil
}

// Value returns the value of the gauge name whose series has every label
// pair of labels (the first such series), or 0 when there is none.
func (p Previous) Value(name string, labels map[string]string) float64 {
	for _, m := range p[name] {
		if hasLabels(m, labels) {
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// hasLabels reports whether m has every label pair of want; a pair with
// an empty value also matches a label m does not have (Prometheus's
// reading of an empty label).
func hasLabels(m *dto.Metric, want map[string]string) bool {
	have := map[string]string{}
	for _, l := range m.GetLabel() {
		have[l.GetName()] = l.GetValue()
	}
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}
