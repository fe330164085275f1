package bootcheck

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DefaultPattern is the console pattern that shows a guest is up: a login
// prompt at the end of a line (carriage returns are dropped before
// matching).
const DefaultPattern = `(?m)login: ?$`

// The checks a Report names.
const (
	CheckConsole = "console-pattern" // the serial console matched the pattern
	CheckAgent   = "guest-agent"     // the QEMU guest agent answered
)

// Options configure Run.
type Options struct {
	Machine Machine
	// Timeout is how long the guest has, from QEMU's start, to show it is
	// up (> 0).
	Timeout time.Duration
	// Pattern, when set, must match the serial console.
	Pattern *regexp.Regexp
	// Agent requires the QEMU guest agent to answer. At least one of
	// Pattern and Agent is required.
	Agent bool
	// ConsoleLog is the file the serial console is written to (created
	// or truncated; it stays; Report.ConsoleLog names it only once Run
	// opened it). Screenshot, when set, is the PNG file the screen is
	// saved to at the end.
	ConsoleLog, Screenshot string
	// Accel is "kvm", "tcg" or "" (auto: KVM when /dev/kvm opens and
	// QEMU starts with it, else TCG).
	Accel string
	// Dir is a private directory (0700) for the overlays and sockets,
	// which Run empties again; empty: Run makes one in the temporary
	// directory and removes it.
	Dir string
	// LookPath finds QEMU's programs (exec.LookPath when nil).
	LookPath func(string) (string, error)
	// OVMFDir holds OVMF_CODE*.fd and OVMF_VARS*.fd (/usr/share/OVMF when
	// empty).
	OVMFDir string
}

// Report says how a boot check went (JSON inside the drill's report).
type Report struct {
	OK     bool     `json:"ok"`
	Checks []string `json:"checks"`           // what had to pass: CheckConsole, CheckAgent
	Passed []string `json:"passed,omitempty"` // what passed, in the order it did
	// SecondsToBoot is from QEMU's start to the last check passing.
	SecondsToBoot  float64 `json:"seconds-to-boot,omitempty"`
	TimeoutSeconds float64 `json:"timeout-seconds"`
	// Reason says why the guest did not boot (or the check could not
	// run): "no bootable device (SeaBIOS)", "kernel panic: …", "timeout
	// after 300s: …".
	Reason      string `json:"reason,omitempty"`
	Accelerator string `json:"accelerator,omitempty"` // "kvm" or "tcg"
	// KVMError says why QEMU did not start with KVM (then TCG ran).
	KVMError    string `json:"kvm-error,omitempty"`
	Firmware    string `json:"firmware"`
	MachineType string `json:"machine"`
	MemoryMiB   int    `json:"memory-mib"`
	Cores       int    `json:"cores"`
	Disks       []Disk `json:"disks"`
	ConsoleLog  string `json:"console-log,omitempty"`
	Screenshot  string `json:"screenshot,omitempty"`
	// ScreenshotError says why there is no screenshot.
	ScreenshotError string `json:"screenshot-error,omitempty"`
}

// deadEnd is console or firmware output after which a guest cannot come
// up: Run stops at once. what names it; the matched line is appended
// when line.
type deadEnd struct {
	re   *regexp.Regexp
	what string
	line bool
}

var deadEnds = []deadEnd{
	{regexp.MustCompile(`No bootable device`), "no bootable device (SeaBIOS)", false},
	{regexp.MustCompile(`No bootable option or device was found`), "no bootable device (OVMF)", false},
	{regexp.MustCompile(`UEFI Interactive Shell`), "no bootable device (OVMF started the UEFI shell)", false},
	{regexp.MustCompile(`Boot failed: not a bootable disk[^\n]*\n(?s:.*)No bootable device`), "no bootable device (SeaBIOS: not a bootable disk)", false},
	{regexp.MustCompile(`Kernel panic - not syncing:[^\n]*`), "kernel panic", true},
	{regexp.MustCompile(`Booting kernel failed:[^\n]*`), "the bootloader could not start the kernel", true},
	{regexp.MustCompile(`Could not find kernel image:[^\n]*`), "the bootloader found no kernel", true},
	{regexp.MustCompile(`Entering rescue mode\.\.\.`), "GRUB rescue shell", false},
}

// Run boots o.Machine and waits until it shows it is up (see the package
// doc). The Report is filled whatever happens. Errors: ErrDidNotBoot
// (Report.Reason says why); ErrNoQEMU; ErrQEMU; when ctx ended first,
// its cause (context.Cause: e.g. the error a disk's source failed a read
// with, when the caller cancels ctx with it). QEMU is stopped and the overlays removed before Run
// returns.
func Run(ctx context.Context, o Options) (rep Report, err error) {
	m := o.Machine
	rep = Report{Firmware: m.Firmware, MachineType: m.Type, MemoryMiB: m.MemoryMiB, Cores: m.Cores, Disks: m.Disks,
		TimeoutSeconds: o.Timeout.Seconds()}
	if o.Pattern != nil {
		rep.Checks = append(rep.Checks, CheckConsole)
	}
	if o.Agent {
		rep.Checks = append(rep.Checks, CheckAgent)
	}
	defer func() {
		if err != nil && rep.Reason == "" {
			rep.Reason = err.Error()
		}
	}()
	if len(rep.Checks) == 0 || o.Timeout <= 0 || o.ConsoleLog == "" || len(m.Disks) == 0 {
		return rep, errors.New("bootcheck: want a pattern or the agent, a timeout, a console log and a disk")
	}
	qemu, qemuImg, err := findQEMU(o.LookPath)
	if err != nil {
		return rep, err
	}
	dir := o.Dir
	if dir == "" {
		var done func()
		if dir, done, err = MakeDir(""); err != nil {
			return rep, err
		}
		defer done()
	}
	var made []string // files made in dir, removed at the end
	defer func() {
		for _, p := range made {
			os.Remove(p)
		}
	}()
	var fwArgs []string
	if m.Firmware == "ovmf" {
		vars := filepath.Join(dir, "OVMF_VARS.fd")
		made = append(made, vars)
		if fwArgs, err = ovmfArgs(o.OVMFDir, vars); err != nil {
			return rep, err
		}
	}
	kvm := o.Accel != "tcg" && kvmUsable()
	if o.Accel == "kvm" && !kvm {
		return rep, fmt.Errorf("%w: --accel kvm: /dev/kvm cannot be opened for reading and writing", ErrQEMU)
	}
	if kvm {
		r, err := boot(ctx, o, rep, qemu, qemuImg, dir, fwArgs, true)
		if !errors.Is(err, errKVMFailed) || o.Accel == "kvm" {
			return r, err
		}
		rep.KVMError = err.Error()
	}
	return boot(ctx, o, rep, qemu, qemuImg, dir, fwArgs, false)
}

// CheckTools checks, before a boot check's long preparation (a restore),
// that it can run: qemu-system-x86_64 and qemu-img on PATH (look finds
// them; exec.LookPath when nil) and, with ovmf, OVMF's firmware files in
// ovmfDir (/usr/share/OVMF when empty). The error is ErrNoQEMU naming the
// Debian package to install.
func CheckTools(look func(string) (string, error), ovmf bool, ovmfDir string) error {
	if _, _, err := findQEMU(look); err != nil {
		return err
	}
	if ovmf {
		if _, _, err := findOVMF(ovmfDir); err != nil {
			return err
		}
	}
	return nil
}

// findQEMU returns the paths of qemu-system-x86_64 and qemu-img.
func findQEMU(look func(string) (string, error)) (qemu, qemuImg string, err error) {
	if look == nil {
		look = exec.LookPath
	}
	if qemu, err = look("qemu-system-x86_64"); err != nil {
		return "", "", fmt.Errorf("%w: qemu-system-x86_64 is not on PATH: install qemu-system-x86 (Debian)", ErrNoQEMU)
	}
	if qemuImg, err = look("qemu-img"); err != nil {
		return "", "", fmt.Errorf("%w: qemu-img is not on PATH: install qemu-utils (Debian)", ErrNoQEMU)
	}
	return qemu, qemuImg, nil
}

// errKVMFailed: QEMU with KVM exited before the guest wrote anything.
var errKVMFailed = errors.New("QEMU with KVM exited at once")

// boot is one start of the machine (with KVM or TCG): overlays in dir,
// QEMU, the wait, the screenshot, the stop. QEMU exiting before the guest
// wrote to its console with kvm is errKVMFailed.
func boot(ctx context.Context, o Options, base Report, qemu, qemuImg, dir string, fwArgs []string, kvm bool) (rep Report, err error) {
	rep, m := base, o.Machine
	var made []string // files made in dir, removed at the end
	defer func() {
		for _, p := range made {
			os.Remove(p)
		}
	}()
	defer func() {
		if err != nil && !errors.Is(err, errKVMFailed) && rep.Reason == "" {
			rep.Reason = err.Error()
		}
	}()
	for i, d := range m.Disks {
		ov := filepath.Join(dir, fmt.Sprintf("disk%d-%s.qcow2", i, safeName(d.Name)))
		made = append(made, ov)
		// A raw backing file read through the overlay: writes of the
		// guest land in ov only.
		if out, err := exec.CommandContext(ctx, qemuImg, "create", "-q", "-f", "qcow2", "-F", "raw", "-b", d.Source, ov).CombinedOutput(); err != nil {
			if ctx.Err() != nil {
				return rep, context.Cause(ctx)
			}
			return rep, fmt.Errorf("%w: qemu-img create (overlay of %s): %v: %s", ErrQEMU, d.Name, err, bytes.TrimSpace(out))
		}
	}
	console, err := os.OpenFile(o.ConsoleLog, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return rep, err
	}
	defer console.Close()
	rep.ConsoleLog = o.ConsoleLog // this run's, once it is there
	fwLog := filepath.Join(dir, "firmware.log")
	qmpSock, agentSock := filepath.Join(dir, "qmp.sock"), filepath.Join(dir, "qga.sock")
	made = append(made, fwLog, qmpSock, agentSock)
	args := qemuArgs(m, dir, o.ConsoleLog, fwLog, qmpSock, agentSock, o.Agent, kvm)
	args = append(args, fwArgs...)

	var stderr tailBuffer
	cmd := exec.Command(qemu, args...)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	// Its own process group: a Ctrl-C at the terminal reaches pbsdirect,
	// which stops QEMU itself; QEMU dies with pbsdirect.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return rep, fmt.Errorf("%w: %s: %v", ErrQEMU, qemu, err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	var qmp *qmpClient
	defer func() { stopQEMU(qmp, cmd, exited) }()

	qctx, qcancel := context.WithTimeout(ctx, 30*time.Second)
	go func() {
		select {
		case <-exited:
			qcancel()
		case <-qctx.Done():
		}
	}()
	qmp, err = dialQMP(qctx, qmpSock)
	qcancel()
	if err != nil {
		if ctx.Err() != nil {
			return rep, context.Cause(ctx)
		}
		// QEMU dying closes the socket first: wait for its exit status.
		select {
		case <-exited:
		case <-time.After(2 * time.Second):
		}
		select {
		case <-exited:
			if kvm {
				return rep, fmt.Errorf("%w (%v): %s", errKVMFailed, waitErr, stderr.String())
			}
			return rep, fmt.Errorf("%w: %s exited (%v): %s", ErrQEMU, filepath.Base(qemu), waitErr, stderr.String())
		default:
		}
		return rep, fmt.Errorf("%w: %v", ErrQEMU, err)
	}

	defer func() {
		if o.Screenshot == "" {
			return
		}
		select {
		case <-exited:
			rep.ScreenshotError = "QEMU had exited"
			return
		default:
		}
		if ctx.Err() != nil {
			rep.ScreenshotError = "interrupted"
			return
		}
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		if err := screenshot(sctx, qmp, dir, o.Screenshot); err != nil {
			rep.ScreenshotError = err.Error()
		} else {
			rep.Screenshot = o.Screenshot
		}
	}()
	rep.Accelerator = "tcg"
	if r, err := qmp.execute(ctx, "query-kvm", nil); err == nil {
		var k struct{ Enabled bool }
		if json.Unmarshal(r, &k) == nil && k.Enabled {
			rep.Accelerator = "kvm"
		}
	}

	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	agentUp := make(chan struct{}, 1)
	if o.Agent {
		go waitAgent(actx, agentSock, agentUp)
	}
	con := &logTail{f: console}
	fw := &logTail{}
	timeout := time.NewTimer(o.Timeout - time.Since(start))
	defer timeout.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var down time.Time // when the guest powered off or reset
	passed := func(check string) {
		rep.Passed = append(rep.Passed, check)
		rep.SecondsToBoot = time.Since(start).Seconds()
	}
	has := func(check string) bool {
		for _, p := range rep.Passed {
			if p == check {
				return true
			}
		}
		return false
	}
	for len(rep.Passed) < len(rep.Checks) {
		select {
		case <-ctx.Done():
			return rep, context.Cause(ctx)
		case <-exited:
			con.poll()
			if o.Pattern != nil && !has(CheckConsole) && o.Pattern.Match(con.buf) {
				passed(CheckConsole)
				continue
			}
			if kvm && con.off == 0 {
				return rep, fmt.Errorf("%w (%v): %s", errKVMFailed, waitErr, stderr.String())
			}
			return rep, fmt.Errorf("%w: %s exited by itself (%v): %s", ErrQEMU, filepath.Base(qemu), waitErr, stderr.String())
		case ev := <-qmp.Events:
			if (ev == "SHUTDOWN" || ev == "RESET") && down.IsZero() {
				down = time.Now()
			}
		case <-agentUp:
			passed(CheckAgent)
		case <-timeout.C:
			return rep, fmt.Errorf("%w: timeout after %s waiting for %s", ErrDidNotBoot, o.Timeout, strings.Join(missing(rep), " and "))
		case <-tick.C:
			if fw.f == nil {
				fw.f, _ = os.Open(fwLog)
				if fw.f != nil {
					defer fw.f.Close()
				}
			}
			con.poll()
			fw.poll()
			if o.Pattern != nil && !has(CheckConsole) && o.Pattern.Match(con.buf) {
				passed(CheckConsole)
				continue
			}
			if why := findDeadEnd(con.buf, fw.buf); why != "" {
				return rep, fmt.Errorf("%w: %s", ErrDidNotBoot, why)
			}
			// The console's last lines reach the log a moment after the
			// power-off event: a second's grace.
			if !down.IsZero() && time.Since(down) > time.Second {
				return rep, fmt.Errorf("%w: the guest powered off or reset before it showed it was up (waiting for %s)", ErrDidNotBoot, strings.Join(missing(rep), " and "))
			}
		}
	}
	rep.OK = true
	return rep, nil
}

// missing names the checks that have not passed.
func missing(rep Report) []string {
	var out []string
	for _, c := range rep.Checks {
		found := false
		for _, p := range rep.Passed {
			found = found || p == c
		}
		if !found {
			out = append(out, c)
		}
	}
	return out
}

// findDeadEnd returns what dead end the console or firmware output shows,
// or "".
func findDeadEnd(console, firmware []byte) string {
	for _, d := range deadEnds {
		for _, b := range [][]byte{console, firmware} {
			if m := d.re.Find(b); m != nil {
				if d.line {
					return d.what + ": " + strings.TrimSpace(string(m[:min(len(m), 200)]))
				}
				return d.what
			}
		}
	}
	return ""
}

// screenshot saves the screen of the QEMU of qmp to png (QMP screendump
// to a PPM in dir, then converted).
func screenshot(ctx context.Context, qmp *qmpClient, dir, png string) error {
	ppm := filepath.Join(dir, "screen.ppm")
	defer os.Remove(ppm)
	if _, err := qmp.execute(ctx, "screendump", map[string]string{"filename": ppm}); err != nil {
		return err
	}
	return PPMToPNG(ppm, png)
}

// stopQEMU quits QEMU over QMP and kills it when it has not exited within
// 5 seconds; it returns once the process is gone.
func stopQEMU(qmp *qmpClient, cmd *exec.Cmd, exited <-chan struct{}) {
	if qmp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		qmp.execute(ctx, "quit", nil)
		cancel()
		defer qmp.Close()
	}
	select {
	case <-exited:
		return
	case <-time.After(5 * time.Second):
	}
	cmd.Process.Kill()
	<-exited
}

// kvmUsable reports whether /dev/kvm opens for reading and writing.
func kvmUsable() bool {
	f, err := os.OpenFile("/dev/kvm", os.O_RDWR, 0)
	if err != nil {
		return false
	}
	f.Close()
	return true
}

// ovmfArgs finds OVMF's code and variables files in dir (default
// /usr/share/OVMF), copies the variables to vars and returns the pflash
// arguments.
func ovmfArgs(dir, vars string) ([]string, error) {
	if dir == "" {
		dir = "/usr/share/OVMF"
	}
	code, varsSrc, err := findOVMF(dir)
	if err != nil {
		return nil, err
	}
	b, err := os.ReadFile(varsSrc)
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(vars, b, 0o600); err != nil {
		return nil, err
	}
	return []string{"-drive", "if=pflash,format=raw,unit=0,readonly=on,file=" + optEscape(code),
		"-drive", "if=pflash,format=raw,unit=1,file=" + optEscape(vars)}, nil
}

// findOVMF returns OVMF's code and variables files in dir (default
// /usr/share/OVMF).
func findOVMF(dir string) (code, vars string, err error) {
	if dir == "" {
		dir = "/usr/share/OVMF"
	}
	for _, pair := range [][2]string{{"OVMF_CODE_4M.fd", "OVMF_VARS_4M.fd"}, {"OVMF_CODE.fd", "OVMF_VARS.fd"}} {
		code, vars := filepath.Join(dir, pair[0]), filepath.Join(dir, pair[1])
		if st, err := os.Stat(vars); err != nil || !st.Mode().IsRegular() {
			continue
		}
		if _, err := os.Stat(code); err != nil {
			continue
		}
		return code, vars, nil
	}
	return "", "", fmt.Errorf("%w: no OVMF firmware (OVMF_CODE*.fd, OVMF_VARS*.fd) in %s: install ovmf (Debian)", ErrNoQEMU, dir)
}

// qemuArgs is QEMU's command line for m: no network, no default devices,
// the console to consoleLog, firmware debug output (port 0x402) to
// fwLog, QMP on qmpSock and, with agent, the guest agent's port on
// agentSock; each disk through its overlay in dir.
func qemuArgs(m Machine, dir, consoleLog, fwLog, qmpSock, agentSock string, agent, kvm bool) []string {
	a := []string{"-name", "pbsdirect-boot-check", "-nodefaults", "-no-user-config", "-machine", m.Type}
	if kvm {
		a = append(a, "-accel", "kvm") // falls back to the next when KVM does not start
	}
	a = append(a, "-accel", "tcg", "-cpu", "max", "-m", strconv.Itoa(m.MemoryMiB), "-smp", strconv.Itoa(m.Cores),
		"-nic", "none", "-display", "none", "-vga", "std", "-no-reboot", "-no-shutdown",
		"-chardev", "file,id=console,path="+optEscape(consoleLog), "-serial", "chardev:console",
		"-chardev", "file,id=firmware,path="+optEscape(fwLog), "-device", "isa-debugcon,iobase=0x402,chardev=firmware",
		"-chardev", "socket,id=qmp,server=on,wait=off,path="+optEscape(qmpSock), "-mon", "chardev=qmp,mode=control")
	if agent {
		a = append(a, "-chardev", "socket,id=qga,server=on,wait=off,path="+optEscape(agentSock),
			"-device", "virtio-serial-pci,id=vser0", "-device", "virtserialport,bus=vser0.0,chardev=qga,name=org.qemu.guest_agent.0")
	}
	scsi, sata := false, false
	for i, d := range m.Disks {
		id := fmt.Sprintf("drive%d", i)
		ov := filepath.Join(dir, fmt.Sprintf("disk%d-%s.qcow2", i, safeName(d.Name)))
		a = append(a, "-drive", "if=none,format=qcow2,cache=unsafe,id="+id+",file="+optEscape(ov))
		boot := ""
		if d.BootIndex >= 0 {
			boot = ",bootindex=" + strconv.Itoa(d.BootIndex)
		}
		switch d.Bus {
		case "scsi":
			if !scsi {
				a, scsi = append(a, "-device", m.SCSIHW+",id=scsihw0"), true
			}
			a = append(a, "-device", fmt.Sprintf("scsi-hd,bus=scsihw0.0,scsi-id=%d,drive=%s%s", d.Index, id, boot))
		case "sata":
			if !sata {
				a, sata = append(a, "-device", "ahci,id=ahci0"), true
			}
			a = append(a, "-device", fmt.Sprintf("ide-hd,bus=ahci0.%d,drive=%s%s", d.Index, id, boot))
		case "ide":
			if m.Type == "q35" {
				a = append(a, "-device", fmt.Sprintf("ide-hd,bus=ide.%d,drive=%s%s", d.Index, id, boot))
			} else {
				a = append(a, "-device", fmt.Sprintf("ide-hd,bus=ide.%d,unit=%d,drive=%s%s", d.Index/2, d.Index%2, id, boot))
			}
		default:
			a = append(a, "-device", fmt.Sprintf("virtio-blk-pci,drive=%s%s", id, boot))
		}
	}
	return a
}

// optEscape doubles the commas of a QEMU option value.
func optEscape(s string) string { return strings.ReplaceAll(s, ",", ",,") }

// safeName keeps letters, digits, '-' and '_' of a disk name for a file
// name.
func safeName(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' {
			return r
		}
		return '_'
	}, s)
}

// logTail reads what a log file gained since the last poll into buf,
// carriage returns dropped, keeping at most the last MaxMatchBytes.
type logTail struct {
	f   *os.File
	off int64
	buf []byte
}

func (t *logTail) poll() {
	if t.f == nil {
		return
	}
	chunk := make([]byte, 64<<10)
	for {
		n, err := t.f.ReadAt(chunk, t.off)
		t.off += int64(n)
		t.buf = append(t.buf, bytes.ReplaceAll(chunk[:n], []byte("\r"), nil)...)
		if len(t.buf) > MaxMatchBytes {
			t.buf = append(t.buf[:0], t.buf[len(t.buf)-MaxMatchBytes:]...)
		}
		if n < len(chunk) || err != nil {
			return
		}
	}
}

// tailBuffer keeps the last 4 KiB written to it (QEMU's own messages).
type tailBuffer struct {
	mu  sync.Mutex
	buf []byte
}

func (b *tailBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf = append(b.buf, p...)
	if len(b.buf) > 4<<10 {
		b.buf = b.buf[len(b.buf)-4<<10:]
	}
	return len(p), nil
}

func (b *tailBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.TrimSpace(string(b.buf))
}

var _ io.Writer = (*tailBuffer)(nil)
