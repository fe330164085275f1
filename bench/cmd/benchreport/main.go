// Command benchreport turns the measurements bench/run.sh records (one JSON
// object a line) into the benchmark table and the goal checks: medians of
// the repeated runs, MB/s of non-zero data, the ratio of every row to
// pbsdirect's default configuration in the same dataset and variant, the
// ceiling rows, and PASS/FAIL lines. It prints the text table, and writes
// it as markdown (-md) and the computed rows and checks as JSON (-json).
//
// Record types (field "type"):
//
//	run      one timed run: dataset, variant, config, tool, wall, cpu,
//	         rss_mib, data_bytes, optional summary (pbsdirect's JSON summary)
//	ceiling  dataset, variant, decode_mbps_1t (single-thread decode MB/s of
//	         the dataset's own chunks, bench/cmd/chunkbench),
//	         decode_cpu_ns_per_byte (its CPU time per plaintext byte), cores,
//	         unique_bytes (plaintext bytes of the unique chunks), write_mbps
//	         (the fastest O_DIRECT writer, fio or dd, into a reserved
//	         target), write_label, write_bytes
//	write    dataset, tool (fio or dd), writers, write_mbps: one way of
//	         writing measured for the write ceiling
//	touch    dataset, variant, cpu (CPU seconds of first-touching the
//	         buffers of that variant's default restore, chunkbench touch),
//	         touch_bytes
//	sparse   variant, expected_chunks, allocated (du -B1 of the restored file)
//	backup   dataset, variant, seconds, image_bytes
//	note     text
package main

import (
	"bufio"
	"cmp"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
)

type record struct {
	Type      string         `json:"type"`
	Dataset   string         `json:"dataset"`
	Variant   string         `json:"variant"`
	Config    string         `json:"config"`
	Tool      string         `json:"tool"`
	Wall      float64        `json:"wall"`
	CPU       float64        `json:"cpu"`
	HostCPU   *float64       `json:"host_cpu"`
	RSSMiB    float64        `json:"rss_mib"`
	DataBytes float64        `json:"data_bytes"`
	Summary   map[string]any `json:"summary,omitempty"`

	DecodeMBps1T float64 `json:"decode_mbps_1t"`
	DecodeCPUNs  float64 `json:"decode_cpu_ns_per_byte"`
	Writers      int     `json:"writers"`
	Cores        int     `json:"cores"`
	UniqueBytes  float64 `json:"unique_bytes"`
	WriteMBps    float64 `json:"write_mbps"`
	WriteLabel   string  `json:"write_label"`

	ExpectedChunks float64 `json:"expected_chunks"`
	Allocated      float64 `json:"allocated"`
	Seconds        float64 `json:"seconds"`
	ImageBytes     float64 `json:"image_bytes"`
	Text           string  `json:"text"`
	TouchBytes     float64 `json:"touch_bytes"`
}

// Row is one line of the table (medians over runs).
type Row struct {
	Dataset   string         `json:"dataset"`
	Variant   string         `json:"variant"`
	Config    string         `json:"config"`
	Runs      int            `json:"runs"`
	Wall      float64        `json:"wall_seconds"`
	DataMBps  float64        `json:"data_mb_per_second"`
	CPU       float64        `json:"cpu_seconds"`      // NaN: not measured (ceilings)
	HostCPU   float64        `json:"host_cpu_seconds"` // busy CPU of the whole machine during the run; NaN: not measured
	RSSMiB    float64        `json:"peak_rss_mib"`     // NaN: not measured
	Ratio     float64        `json:"ratio_to_ref"`     // row wall / pbsdirect defaults wall; NaN: no reference
	Tool      string         `json:"tool"`
	DataBytes float64        `json:"data_bytes"`
	Walls     []float64      `json:"walls"`
	Summary   map[string]any `json:"summary,omitempty"`
}

// Check is one goal line.
type Check struct {
	Status string `json:"status"` // PASS, FAIL, SKIP, INFO
	Text   string `json:"text"`
}

const refConfig = "pbsdirect defaults"

var datasetOrder = []string{"vm", "random", "reuse", "sparse"}

// variantRank orders plain before encrypted, local before bucket before
// bucket through the latency proxy ("s3+20ms").
func variantRank(v string) int {
	crypt, where, _ := strings.Cut(v, "/")
	r := 0
	switch {
	case where == "local":
	case where == "s3":
		r = 2
	case strings.HasPrefix(where, "s3+"):
		r = 4
	default:
		r = 6
	}
	if crypt != "plain" {
		r++
	}
	return r
}

// variants returns the distinct variants of rows, in table order.
func variants(rows []Row) []string {
	var vs []string
	seen := map[string]bool{}
	for _, r := range rows {
		if !seen[r.Variant] {
			seen[r.Variant] = true
			vs = append(vs, r.Variant)
		}
	}
	return vs
}

func orderOf(list []string, s string) int {
	for i, v := range list {
		if v == s {
			return i
		}
	}
	return len(list)
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// MarshalJSON writes unmeasured (NaN) values as null.
func (r Row) MarshalJSON() ([]byte, error) {
	type alias Row
	return json.Marshal(struct {
		alias
		CPU     any `json:"cpu_seconds"`
		HostCPU any `json:"host_cpu_seconds"`
		RSSMiB  any `json:"peak_rss_mib"`
		Ratio   any `json:"ratio_to_ref"`
	}{alias(r), nn(r.CPU), nn(r.HostCPU), nn(r.RSSMiB), nn(r.Ratio)})
}

func nn(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

func main() {
	in := flag.String("in", "", "records (JSON lines)")
	mdOut := flag.String("md", "", "write the markdown table here")
	jsonOut := flag.String("json", "", "write rows and checks as JSON here")
	title := flag.String("title", "pbsdirect benchmark", "heading of the markdown file")
	flag.Parse()
	f, err := os.Open(*in)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var recs []record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		var r record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			fmt.Fprintf(os.Stderr, "bad record %q: %v\n", line, err)
			os.Exit(1)
		}
		recs = append(recs, r)
	}
	f.Close()
	rows, checks, notes := build(recs)
	text := renderText(rows, checks, notes)
	fmt.Print(text)
	if *mdOut != "" {
		if err := os.WriteFile(*mdOut, []byte(renderMarkdown(*title, rows, checks, notes)), 0o644); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
	if *jsonOut != "" {
		b, err := json.MarshalIndent(map[string]any{"rows": rows, "checks": checks, "notes": notes, "records": recs}, "", "  ")
		if err == nil {
			err = os.WriteFile(*jsonOut, append(b, '\n'), 0o644)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
	}
}

type key struct{ dataset, variant, config string }

func build(recs []record) ([]Row, []Check, []string) {
	// Group runs, keeping the order configs first appear in.
	groups := map[key][]record{}
	var order []key
	ceil := map[[2]string]record{}
	var writes []record
	sparse := map[string]record{}
	touches := map[[2]string]record{}
	backups := []record{}
	var notes []string
	for _, r := range recs {
		switch r.Type {
		case "run":
			k := key{r.Dataset, r.Variant, r.Config}
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], r)
		case "ceiling":
			ceil[[2]string{r.Dataset, r.Variant}] = r
		case "write":
			writes = append(writes, r)
		case "sparse":
			sparse[r.Variant] = r
		case "touch":
			touches[[2]string{r.Dataset, r.Variant}] = r
		case "backup":
			backups = append(backups, r)
		case "note":
			notes = append(notes, r.Text)
		}
	}
	rowOf := map[key]*Row{}
	var rows []Row
	for _, k := range order {
		rs := groups[k]
		var walls, cpus, rsss, data, hosts []float64
		for _, r := range rs {
			if r.HostCPU != nil {
				hosts = append(hosts, *r.HostCPU)
			}
			walls = append(walls, r.Wall)
			cpus = append(cpus, r.CPU)
			rsss = append(rsss, r.RSSMiB)
			data = append(data, r.DataBytes)
		}
		row := Row{Dataset: k.dataset, Variant: k.variant, Config: k.config, Tool: rs[0].Tool, Runs: len(rs),
			Wall: median(walls), CPU: median(cpus), RSSMiB: median(rsss), DataBytes: median(data), Walls: walls, Ratio: math.NaN(), HostCPU: median(hosts)}
		// Keep the summary of the median run.
		for _, r := range rs {
			if r.Wall == row.Wall && r.Summary != nil {
				row.Summary = r.Summary
			}
		}
		if row.Summary == nil && rs[0].Summary != nil {
			row.Summary = rs[0].Summary
		}
		row.DataMBps = row.DataBytes / 1e6 / row.Wall
		rows = append(rows, row)
	}
	// Ceiling rows for local variants.
	for dv, c := range ceil {
		ref := findRow(rows, dv[0], dv[1], refConfig)
		dataBytes := c.DataBytes
		if ref != nil && dataBytes == 0 {
			dataBytes = ref.DataBytes
		}
		if c.DecodeMBps1T > 0 {
			t := c.UniqueBytes / 1e6 / (c.DecodeMBps1T * float64(c.Cores))
			rows = append(rows, Row{Dataset: dv[0], Variant: dv[1], Tool: "ceiling", Runs: 1,
				Config: fmt.Sprintf("decode ceiling (%.0f MB/s/core × %d)", c.DecodeMBps1T, c.Cores),
				Wall:   t, DataBytes: dataBytes, DataMBps: dataBytes / 1e6 / t, CPU: math.NaN(), HostCPU: math.NaN(), RSSMiB: math.NaN(), Ratio: math.NaN()})
		}
		if c.WriteMBps > 0 {
			t := dataBytes / 1e6 / c.WriteMBps
			rows = append(rows, Row{Dataset: dv[0], Variant: dv[1], Tool: "ceiling", Runs: 1,
				Config: fmt.Sprintf("write ceiling (%s, %.0f MB/s)", cmp.Or(c.WriteLabel, "dd O_DIRECT"), c.WriteMBps),
				Wall:   t, DataBytes: dataBytes, DataMBps: c.WriteMBps, CPU: math.NaN(), HostCPU: math.NaN(), RSSMiB: math.NaN(), Ratio: math.NaN()})
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		a, b := rows[i], rows[j]
		if x, y := orderOf(datasetOrder, a.Dataset), orderOf(datasetOrder, b.Dataset); x != y {
			return x < y
		}
		if x, y := variantRank(a.Variant), variantRank(b.Variant); x != y {
			return x < y
		}
		if a.Variant != b.Variant {
			return a.Variant < b.Variant
		}
		// Reference first, ceilings last.
		ra, rb := rank(a), rank(b)
		return ra < rb
	})
	for i := range rows {
		if ref := findRow(rows, rows[i].Dataset, rows[i].Variant, refConfig); ref != nil && ref.Wall > 0 {
			rows[i].Ratio = rows[i].Wall / ref.Wall
		}
	}
	for i := range rows {
		rowOf[key{rows[i].Dataset, rows[i].Variant, rows[i].Config}] = &rows[i]
	}

	var checks []Check
	add := func(ok bool, format string, args ...any) {
		st := "FAIL"
		if ok {
			st = "PASS"
		}
		checks = append(checks, Check{st, fmt.Sprintf(format, args...)})
	}
	skip := func(format string, args ...any) {
		checks = append(checks, Check{"SKIP", fmt.Sprintf(format, args...)})
	}
	info := func(format string, args ...any) {
		checks = append(checks, Check{"INFO", fmt.Sprintf(format, args...)})
	}

	// defaults vs jobs 1.
	for _, ds := range datasetOrder {
		for _, v := range []string{"plain/local", "encrypted/local"} {
			d, j := findRow(rows, ds, v, refConfig), findRow(rows, ds, v, "pbsdirect --jobs 1 --writers 0")
			if d == nil || j == nil {
				if ds == "vm" && v == "plain/local" {
					skip("[issue 2] pbsdirect defaults ≥ 1.7× --jobs 1 --writers 0 (sequential) on the realistic image: not measured")
				}
				continue
			}
			sp := j.Wall / d.Wall
			if ds == "vm" && v == "plain/local" {
				add(sp >= 1.7, "[issue 2] pbsdirect defaults ≥ 1.7× --jobs 1 --writers 0 (sequential) on the realistic image (plain, local): %.2f×", sp)
			} else if ds != "sparse" {
				info("pbsdirect defaults vs --jobs 1 --writers 0, %s %s: %.2f×", ds, v, sp)
			}
		}
	}
	// desync.
	if d, x := findRow(rows, "vm", "plain/local", refConfig), findRowPrefix(rows, "vm", "plain/local", "desync"); d != nil && x != nil {
		add(x.Wall/d.Wall >= 1.5, "pbsdirect defaults ≥ 1.5× desync extract on the realistic image (plain, local): %.2f×", x.Wall/d.Wall)
	} else {
		skip("pbsdirect defaults ≥ 1.5× desync on the realistic image: not measured")
	}
	for _, ds := range datasetOrder[1:] {
		if d, x := findRow(rows, ds, "plain/local", refConfig), findRowPrefix(rows, ds, "plain/local", "desync"); d != nil && x != nil {
			info("pbsdirect defaults vs desync extract, %s plain/local: %.2f×", ds, x.Wall/d.Wall)
		}
	}
	// Ceilings: from tools that are not pbsdirect (chunkbench's
	// single-threaded decode × cores; fio or dd writing with at least as many
	// writers as pbsdirect). The slower of the two bounds the restore, as if
	// writing took no CPU; a restore faster than a ceiling means that
	// ceiling is not one (FAIL).
	for _, ds := range datasetOrder {
		for _, v := range []string{"plain/local", "encrypted/local"} {
			d := findRow(rows, ds, v, refConfig)
			if d == nil {
				continue
			}
			var worst *Row
			for i := range rows {
				r := &rows[i]
				if r.Dataset != ds || r.Variant != v || r.Tool != "ceiling" {
					continue
				}
				if worst == nil || r.Wall > worst.Wall {
					worst = r
				}
				// 5 % for the noise of one run against another.
				if d.Wall < 0.95*r.Wall {
					add(false, "%s is below pbsdirect's own result (%s %s): %.0f MB/s vs pbsdirect %.0f MB/s",
						strings.SplitN(r.Config, " (", 2)[0], ds, v, r.DataMBps, d.DataMBps)
				}
			}
			if worst == nil {
				continue
			}
			pct := 100 * worst.Wall / d.Wall
			msg := fmt.Sprintf("pbsdirect local restore = %.0f%% of min(decode×cores, write) = %.0f MB/s (%s %s; bound: %s)",
				pct, worst.DataMBps, ds, v, strings.SplitN(worst.Config, " (", 2)[0])
			if ds == "vm" || ds == "random" {
				add(pct >= 90, "%s, goal ≥ 90%%", msg)
			} else {
				info("%s", msg)
			}
		}
	}
	checks = append(checks, cpuPerByte(rows, ceil, touches)...)
	for _, w := range writes {
		info("write ceiling candidate (%s): %s O_DIRECT ×%d writers, %.0f MB/s", w.Dataset, w.Tool, w.Writers, w.WriteMBps)
	}
	// Peak RSS.
	for _, ds := range datasetOrder {
		var maxRSS float64
		var where string
		n := 0
		for _, r := range rows {
			if r.Dataset == ds && r.Tool == "pbsdirect" && !math.IsNaN(r.RSSMiB) {
				n++
				if r.RSSMiB > maxRSS {
					maxRSS, where = r.RSSMiB, r.Variant+" "+r.Config
				}
			}
		}
		if n > 0 {
			add(maxRSS < 256, "pbsdirect peak RSS < 256 MiB, %s: max %.0f MiB (%s)", ds, maxRSS, where)
		}
	}
	// Bucket goals.
	for _, ds := range datasetOrder {
		for _, crypt := range []string{"plain", "encrypted"} {
			local := findRow(rows, ds, crypt+"/local", refConfig)
			var bucketVariants []string
			for _, v := range variants(rows) {
				if v == crypt+"/s3" || strings.HasPrefix(v, crypt+"/s3+") {
					bucketVariants = append(bucketVariants, v)
				}
			}
			for _, v := range bucketVariants {
				b := findRow(rows, ds, v, refConfig)
				s := findRowPrefix(rows, ds, v, "s5cmd")
				if b == nil {
					if s != nil {
						skip("pbsdirect bucket restore ≤ 1.25 × max(s5cmd, local), %s %s: pbsdirect bucket restore not measured", ds, v)
					}
					continue
				}
				if s == nil || local == nil {
					continue
				}
				bound := 1.25 * math.Max(s.Wall, local.Wall)
				add(b.Wall <= bound, "pbsdirect bucket restore ≤ 1.25 × max(s5cmd raw download, pbsdirect local restore), %s %s: %.2fs vs 1.25 × max(%.2fs, %.2fs) = %.2fs",
					ds, v, b.Wall, s.Wall, local.Wall, bound)
			}
			for _, v := range bucketVariants {
				a, bb := findRow(rows, ds, crypt+"/s3", refConfig), findRow(rows, ds, v, refConfig)
				if a == nil || bb == nil || v == crypt+"/s3" {
					continue
				}
				pct := 100 * bb.DataMBps / a.DataMBps
				add(pct >= 80, "bucket throughput through the proxy (%s) ≥ 80%% of direct, defaults, %s %s: %.0f%% (%.0f vs %.0f MB/s)",
					strings.TrimPrefix(v, crypt+"/s3"), ds, crypt, pct, bb.DataMBps, a.DataMBps)
			}
		}
	}
	providerChecks(rows, add, skip)
	// Sparse.
	for _, v := range variants(rows) {
		sp, ok := sparse[v]
		d := findRow(rows, "sparse", v, refConfig)
		if !ok || d == nil {
			continue
		}
		add(d.Wall < 5, "64 TiB sparse restore < 5 s, %s: %.2fs", v, d.Wall)
		fetched := num(d.Summary, "chunks-fetched")
		add(fetched == sp.ExpectedChunks, "64 TiB sparse, %s: chunks-fetched %.0f = %.0f data chunks", v, fetched, sp.ExpectedChunks)
		data := num(d.Summary, "data-bytes")
		zero := num(d.Summary, "zero-bytes")
		add(sp.Allocated <= data+(1<<20), "64 TiB sparse, %s: zeros never written: allocated %s (du -B1) vs %s data, %s zero bytes skipped", v,
			human(sp.Allocated), human(data), human(zero))
	}
	for _, b := range backups {
		if b.Dataset == "sparse" {
			info("64 TiB sparse backup (%s, SEEK_DATA): %.2fs", b.Variant, b.Seconds)
		}
	}
	return rows, checks, notes
}

func num(m map[string]any, k string) float64 {
	if m == nil {
		return math.NaN()
	}
	if v, ok := m[k].(float64); ok {
		return v
	}
	return math.NaN()
}

func human(b float64) string {
	switch {
	case b >= 1<<40:
		return fmt.Sprintf("%.1f TiB", b/(1<<40))
	case b >= 1<<30:
		return fmt.Sprintf("%.2f GiB", b/(1<<30))
	case b >= 1<<20:
		return fmt.Sprintf("%.1f MiB", b/(1<<20))
	}
	return fmt.Sprintf("%.0f B", b)
}

func rank(r Row) int {
	switch {
	case r.Config == refConfig:
		return 0
	case r.Tool == "pbsdirect":
		return 1
	case r.Tool == "ceiling":
		return 3
	}
	return 2
}

func findRow(rows []Row, ds, v, config string) *Row {
	for i := range rows {
		if rows[i].Dataset == ds && rows[i].Variant == v && rows[i].Config == config {
			return &rows[i]
		}
	}
	return nil
}

func findRowPrefix(rows []Row, ds, v, prefix string) *Row {
	for i := range rows {
		if rows[i].Dataset == ds && rows[i].Variant == v && strings.HasPrefix(rows[i].Config, prefix) {
			return &rows[i]
		}
	}
	return nil
}

func f(x float64, prec int) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return "–"
	}
	return fmt.Sprintf("%.*f", prec, x)
}

var header = []string{"dataset", "variant", "tool / config", "runs", "wall s", "data MB/s", "CPU s", "machine CPU s", "peak RSS MiB", "÷ pbsdirect"}

func cells(r Row) []string {
	ratio := f(r.Ratio, 2)
	if r.Config == refConfig {
		ratio = "1.00 (ref)"
	}
	return []string{r.Dataset, r.Variant, r.Config, fmt.Sprint(r.Runs), f(r.Wall, 2), f(r.DataMBps, 0), f(r.CPU, 2), f(r.HostCPU, 2), f(r.RSSMiB, 0), ratio}
}

func renderText(rows []Row, checks []Check, notes []string) string {
	var b strings.Builder
	w := make([]int, len(header))
	all := [][]string{header}
	for _, r := range rows {
		all = append(all, cells(r))
	}
	for _, c := range all {
		for i, s := range c {
			w[i] = max(w[i], len([]rune(s)))
		}
	}
	line := func(c []string) {
		for i, s := range c {
			pad := w[i] - len([]rune(s))
			if i >= 3 {
				b.WriteString(strings.Repeat(" ", pad) + s)
			} else {
				b.WriteString(s + strings.Repeat(" ", pad))
			}
			if i < len(c)-1 {
				b.WriteString("  ")
			}
		}
		b.WriteString("\n")
	}
	line(header)
	sep := make([]string, len(header))
	for i := range sep {
		sep[i] = strings.Repeat("-", w[i])
	}
	line(sep)
	for _, c := range all[1:] {
		line(c)
	}
	b.WriteString("\n")
	writeChecks(&b, checks, notes)
	return b.String()
}

func writeChecks(b io.StringWriter, checks []Check, notes []string) {
	for _, c := range checks {
		b.WriteString(fmt.Sprintf("%-4s  %s\n", c.Status, c.Text))
	}
	for _, n := range notes {
		b.WriteString("note  " + n + "\n")
	}
}

func renderMarkdown(title string, rows []Row, checks []Check, notes []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\n", title)
	b.WriteString("| " + strings.Join(header, " | ") + " |\n")
	b.WriteString("|" + strings.Repeat("---|", 3) + strings.Repeat("---:|", len(header)-3) + "\n")
	for _, r := range rows {
		c := cells(r)
		for i := range c {
			c[i] = strings.ReplaceAll(c[i], "|", "\\|")
		}
		b.WriteString("| " + strings.Join(c, " | ") + " |\n")
	}
	b.WriteString("\n```\n")
	writeChecks(&b, checks, notes)
	b.WriteString("```\n")
	return b.String()
}

// cpuGoals are the goals of the restore's CPU per byte over the
// single-threaded decode's (issue 23), by dataset and variant; the other
// rows' ratios are INFO lines.
var cpuGoals = map[[2]string]float64{
	{"vm", "plain/local"}:     1.10,
	{"random", "plain/local"}: 1.20,
	{"vm", "plain/s3"}:        1.30,
}

// cpuPerByte returns the CPU-per-byte lines: for every pbsdirect defaults
// row of a dataset whose chunks chunkbench decoded (the ceiling record of
// the same dataset and crypt, local: the very chunks a bucket serves too),
// the restore's CPU (user + system, median of the runs) per plaintext byte
// of the archive's unique chunks against the single-threaded decode's
// (each chunk decoded as the pipeline does, warm buffers), their ratio,
// and the ratio with the fixed cost of first-touching the restore's
// buffers (the touch record) taken off and reported apart. The goals of
// cpuGoals are checked on that last ratio. The reuse dataset (4 unique
// chunks written 256 times) and sparse are left out: their restores are
// not decode work.
func cpuPerByte(rows []Row, ceil, touches map[[2]string]record) []Check {
	var out []Check
	for _, ds := range []string{"vm", "random"} {
		for _, r := range rows {
			if r.Dataset != ds || r.Config != refConfig || math.IsNaN(r.CPU) {
				continue
			}
			crypt, _, _ := strings.Cut(r.Variant, "/")
			c, ok := ceil[[2]string{ds, crypt + "/local"}]
			if !ok || c.DecodeCPUNs <= 0 || c.UniqueBytes <= 0 {
				continue
			}
			rc := r.CPU * 1e9 / c.UniqueBytes
			ratio := rc / c.DecodeCPUNs
			msg := fmt.Sprintf("CPU per byte, %s %s: restore %.2f ns/B = %.2f× the single-threaded decode of the same chunks (%.2f ns/B)",
				ds, r.Variant, rc, ratio, c.DecodeCPUNs)
			if t, ok := touches[[2]string{ds, r.Variant}]; ok {
				fixed := t.CPU * 1e9 / c.UniqueBytes
				ratio = (rc - fixed) / c.DecodeCPUNs
				msg += fmt.Sprintf("; first touch of its %.0f MiB of buffers %.2f CPU-s (%.2f ns/B) apart: %.2f×",
					t.TouchBytes/(1<<20), t.CPU, fixed, ratio)
			}
			goal, isGoal := cpuGoals[[2]string{ds, r.Variant}]
			if !isGoal {
				out = append(out, Check{"INFO", msg})
				continue
			}
			st := "FAIL"
			if ratio <= goal {
				st = "PASS"
			}
			out = append(out, Check{st, fmt.Sprintf("%s, goal ≤ %.2f×", msg, goal)})
		}
	}
	return out
}
