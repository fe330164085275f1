package testenv

import (
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/pbsdirect/pbsdirect/internal/fixture"
)

// Pushgateway is a running Prometheus Pushgateway (the Debian package
// prometheus-pushgateway) on a loopback port.
type Pushgateway struct {
	URL string // http://127.0.0.1:PORT
}

// StartPushgateway starts prometheus-pushgateway (from $PATH, else
// /usr/bin) on a free loopback port with its persistence file in a
// temporary directory, and stops it when the test ends. Without the
// binary the test is skipped, or fails under CI=true.
func StartPushgateway(t testing.TB) *Pushgateway {
	t.Helper()
	bin, err := exec.LookPath("prometheus-pushgateway")
	if err != nil {
		bin, err = exec.LookPath("/usr/bin/prometheus-pushgateway")
	}
	if err != nil {
		fixture.SkipOrFail(t, "prometheus-pushgateway not installed (apt-get install prometheus-pushgateway)")
		return nil
	}
	addr, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "--web.listen-address="+addr,
		"--persistence.file="+filepath.Join(t.TempDir(), "pushgateway.data"), "--persistence.interval=1s")
	var out lockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: %v", bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stop := func() {
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(3 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("prometheus-pushgateway output:\n%s", out.String())
		}
	})
	url := "http://" + addr
	hc := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		select {
		case err := <-exited:
			t.Fatalf("prometheus-pushgateway exited before answering (%v): %s", err, out.String())
		default:
		}
		if resp, err := hc.Get(url + "/-/ready"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus-pushgateway did not answer on %s within 20s: %s", addr, out.String())
		}
	}
	return &Pushgateway{URL: url}
}
