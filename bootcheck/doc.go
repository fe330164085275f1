// Package bootcheck proves that a disk image boots: it starts the disks
// in QEMU (qemu-system-x86_64, KVM when /dev/kvm opens, else TCG) with no
// network, each behind a throw-away qcow2 copy-on-write overlay made with
// qemu-img in a private directory, so the source (a restored file, a
// block device, an NBD export of a snapshot) is only ever read; and it
// waits until the guest shows it is up: a pattern on the serial console
// (a login prompt by default), the QEMU guest agent answering guest-sync
// on a virtio-serial port, or both.
//
// Algorithm: Run builds the machine's command line from a Machine
// (firmware SeaBIOS or OVMF, machine type, memory, cores, each disk on its
// bus with the boot order), starts QEMU with the serial console written
// to the console log, SeaBIOS/OVMF debug output to a firmware log, and a
// QMP control socket. Every 100 ms it reads what the console and firmware
// logs gained and matches the pass pattern and the known dead ends (no
// bootable device, a bootloader that failed to start the kernel, a kernel
// panic); the guest agent is polled from its own goroutine; QMP events say
// when the guest powered off or reset (QEMU runs with -no-reboot and
// -no-shutdown, so it stays for the screenshot). It ends at the first of:
// every check passed, a dead end, the guest down, the timeout, QEMU gone,
// or ctx done. Then it takes a screenshot (QMP screendump to PPM,
// converted to PNG here), quits QEMU over QMP and kills it if it has not
// exited within a few seconds, and removes the overlays and sockets. QEMU
// never outlives Run, whatever path Run leaves by.
//
// Memory: the console and firmware logs are matched over at most their
// last MaxMatchBytes each; the screenshot is decoded once.
//
// Layout: cmd → bootcheck; bootcheck imports nothing of pbsdirect's.
package bootcheck

import "errors"

// Errors returned by Run (tested with errors.Is).
var (
	// ErrDidNotBoot: the guest did not show it was up (a dead end, the
	// guest down, or the timeout); the Report's Reason says why. The data
	// proved not to boot.
	ErrDidNotBoot = errors.New("did not boot")
	// ErrNoQEMU: qemu-system-x86_64 or qemu-img (or the OVMF firmware)
	// is not installed; the error says which Debian package to install.
	ErrNoQEMU = errors.New("QEMU not found")
	// ErrQEMU: QEMU or qemu-img failed for a reason outside the data
	// (could not start, crashed, QMP did not answer).
	ErrQEMU = errors.New("QEMU failed")
)

// MaxMatchBytes is how much of the end of the console (and of the
// firmware log) the patterns are matched against: 1 MiB.
const MaxMatchBytes = 1 << 20
