package restore_test

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/backup"
	"github.com/pbsdirect/pbsdirect/internal/fixture"
	"github.com/pbsdirect/pbsdirect/restore"
	"github.com/pbsdirect/pbsdirect/restore/filetarget"
)

// BenchmarkPipelineScaling restores 64 MiB of text-like data (4 MiB chunks,
// zstd ≈3×, like file-system contents) from a local datastore, once with
// one job and no writers (the sequential restore) and once with the
// command's defaults (a job per core, DefaultWriters, a P for each), into a
// discard target and into a file, and reports both throughputs and their
// ratio from the same run. For a scaling curve, give it N cores with
// taskset (Go picks GOMAXPROCS from the CPU affinity; -cpu would not limit
// the cores used):
//
//	for n in 1 2 4 8 16; do
//	  taskset -c 0-$((n-1)) go test -run '^$' -bench PipelineScaling -benchtime 5x ./restore/
//	done
func BenchmarkPipelineScaling(b *testing.B) {
	const size = 64 << 20
	data := fixture.Build(7, fixture.Region{Kind: fixture.Text, Len: size})
	dir := fixture.NewStore(b)
	img := fixture.WriteFile(b, b.TempDir(), "disk.raw", data)
	snap := fixture.Snap(b, "", "vm", "100", fixture.T0)
	fixture.Backup(b, dir, snap, backup.Options{}, backup.Source{Name: "drive-scsi0.img", Path: img})
	store := fixture.OpenStore(b, dir)
	m := fixture.Manifest(b, dir, snap)
	ctx := context.Background()
	// The command's defaults, with a P for every job and writer.
	def := restore.Options{Jobs: restore.DefaultJobs()}
	def.Writers = restore.DefaultWriters(def.Jobs)
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(runtime.GOMAXPROCS(0), def.Jobs+def.Writers)))
	seq := restore.Options{Jobs: 1}
	out := filepath.Join(b.TempDir(), "restored.raw")

	for _, target := range []string{"discard", "file"} {
		b.Run(target, func(b *testing.B) {
			once := func(opts restore.Options) time.Duration {
				plan, _, err := restore.LoadPlan(ctx, store, snap.Dir(), m, "drive-scsi0.img.fidx", nil)
				if err != nil {
					b.Fatal(err)
				}
				var t restore.Target = restore.Discard{}
				if target == "file" {
					os.Remove(out)
					ft, err := filetarget.Open(out, int64(plan.Size), filetarget.Options{})
					if err != nil {
						b.Fatal(err)
					}
					defer ft.Close(false)
					t = ft
				}
				start := time.Now()
				if err := restore.Run(ctx, store, plan, t, opts, nil); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			var d1, dn time.Duration
			b.SetBytes(size)
			for b.Loop() {
				d1 += once(seq)
				dn += once(def)
			}
			mbps := func(d time.Duration) float64 { return float64(size) * float64(b.N) / d.Seconds() / 1e6 }
			b.ReportMetric(mbps(d1), "MB/s-jobs1")
			b.ReportMetric(mbps(dn), "MB/s-default")
			b.ReportMetric(d1.Seconds()/dn.Seconds(), "speedup")
		})
	}
}
