package bootcheck

import (
	"bufio"
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Config is what a boot check takes from a Proxmox VE guest configuration
// (qemu-server.conf): its current section only, never a [snapshot]
// section. Zero values mean "not set".
type Config struct {
	Firmware  string       // "seabios" or "ovmf" (bios:)
	Machine   string       // "pc" or "q35" (machine:, its type only)
	SCSIHW    string       // scsihw: e.g. "virtio-scsi-single", "lsi"
	MemoryMiB int          // memory:
	Cores     int          // cores × sockets
	Disks     []ConfigDisk // scsiN, virtioN, sataN, ideN that are no CD-ROM, in file order
	BootOrder []string     // boot: order=… (disk names; other devices dropped), else bootdisk:
}

// ConfigDisk is a disk of a guest configuration.
type ConfigDisk struct {
	Name  string // "scsi0": the archive is "drive-scsi0.img.fidx"
	Bus   string // "scsi", "virtio", "sata" or "ide"
	Index int
}

var diskKey = regexp.MustCompile(`^(scsi|virtio|sata|ide)([0-9]{1,2})$`)

// ParseConfig parses a qemu-server.conf (at most 1 MiB is read; unknown
// keys are ignored). A value that does not parse is an error naming its
// line.
func ParseConfig(data []byte) (Config, error) {
	var c Config
	sockets := 1
	sc := bufio.NewScanner(bytes.NewReader(data[:min(len(data), 1<<20)]))
	sc.Buffer(nil, 1<<20)
	var bootdisk string
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			break // a snapshot's or pending section: not the guest as it is
		}
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		bad := func(err error) error { return fmt.Errorf("qemu-server.conf line %d: %s: %q: %v", n, key, val, err) }
		switch key {
		case "bios":
			if val != "seabios" && val != "ovmf" {
				return c, bad(fmt.Errorf("want seabios or ovmf"))
			}
			c.Firmware = val
		case "machine":
			t := val
			if v, ok := optValue(val, "type"); ok {
				t = v
			}
			t, _, _ = strings.Cut(t, ",")
			switch {
			case strings.Contains(t, "q35"):
				c.Machine = "q35"
			case t == "" || strings.HasPrefix(t, "pc") || strings.Contains(t, "i440fx"):
				c.Machine = "pc"
			default:
				return c, bad(fmt.Errorf("unknown machine type"))
			}
		case "scsihw":
			c.SCSIHW = val
		case "memory":
			v := val
			if cur, ok := optValue(val, "current"); ok {
				v = cur
			}
			m, err := strconv.Atoi(v)
			if err != nil || m < 16 || m > 1<<22 {
				return c, bad(fmt.Errorf("want MiB, 16..4194304"))
			}
			c.MemoryMiB = m
		case "cores", "sockets":
			m, err := strconv.Atoi(val)
			if err != nil || m < 1 || m > 1024 {
				return c, bad(fmt.Errorf("want 1..1024"))
			}
			if key == "cores" {
				c.Cores = m
			} else {
				sockets = m
			}
		case "boot":
			order, ok := optValue(val, "order")
			if !ok {
				continue // legacy "cdn": bootdisk: names the disk
			}
			for _, d := range strings.Split(order, ";") {
				if diskKey.MatchString(d) {
					c.BootOrder = append(c.BootOrder, d)
				}
			}
		case "bootdisk":
			bootdisk = val
		default:
			m := diskKey.FindStringSubmatch(key)
			if m == nil {
				continue
			}
			if media, _ := optValue(val, "media"); media == "cdrom" {
				continue
			}
			i, _ := strconv.Atoi(m[2])
			c.Disks = append(c.Disks, ConfigDisk{Name: key, Bus: m[1], Index: i})
		}
	}
	if err := sc.Err(); err != nil {
		return c, fmt.Errorf("qemu-server.conf: %w", err)
	}
	if c.Cores > 0 {
		c.Cores *= sockets
	} else if sockets > 1 {
		c.Cores = sockets
	}
	if len(c.BootOrder) == 0 && diskKey.MatchString(bootdisk) {
		c.BootOrder = []string{bootdisk}
	}
	return c, nil
}

// optValue returns the value of key in a property string "a,key=v,b=w".
func optValue(s, key string) (string, bool) {
	for _, p := range strings.Split(s, ",") {
		if k, v, ok := strings.Cut(p, "="); ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v), true
		}
	}
	return "", false
}

// DiskName returns the guest disk name of a disk image archive:
// "drive-scsi0.img.fidx" → "scsi0"; an archive not named by Proxmox VE's
// scheme keeps its name without ".img.fidx".
func DiskName(archive string) string {
	return strings.TrimPrefix(strings.TrimSuffix(strings.TrimSuffix(archive, ".fidx"), ".img"), "drive-")
}

// Machine is the virtual machine a boot check starts.
type Machine struct {
	Firmware  string // "seabios" or "ovmf"
	Type      string // "pc" or "q35"
	SCSIHW    string // SCSI controller device model: "virtio-scsi-pci", "lsi53c895a", "megasas", "pvscsi"
	MemoryMiB int
	Cores     int
	Disks     []Disk
}

// Disk is one disk of a Machine.
type Disk struct {
	Name      string `json:"name"`   // "scsi0"
	Bus       string `json:"bus"`    // "scsi", "virtio", "sata" or "ide"
	Index     int    `json:"-"`      // unit on its bus
	Source    string `json:"source"` // file, block device or NBD URL the overlay reads
	BootIndex int    `json:"boot-index"`
}

// Overrides replace what the configuration says; zero values keep it.
type Overrides struct {
	Firmware  string // "seabios" or "ovmf"
	Type      string // "pc" or "q35"
	Bus       string // every disk on this bus
	MemoryMiB int
	Cores     int
}

// Buses are the disk buses a Machine knows.
var Buses = []string{"scsi", "virtio", "sata", "ide"}

// NewMachine returns the machine for the disks sources (guest disk name,
// e.g. "scsi0" → source) as cfg describes it, with o applied; defaults:
// SeaBIOS, pc, virtio-scsi-pci, 1024 MiB, 1 core. A disk of cfg not among
// sources is left out (not backed up); a source cfg does not name goes on
// the bus its name starts with (else virtio) after cfg's disks. Disks get
// boot indexes in cfg's boot order; with none that matches, every disk in
// order. Values out of range are an error.
func NewMachine(cfg Config, sources map[string]string, o Overrides) (Machine, error) {
	m := Machine{Firmware: cmpOr(o.Firmware, cfg.Firmware, "seabios"), Type: cmpOr(o.Type, cfg.Machine, "pc"),
		SCSIHW: scsiModel(cfg.SCSIHW), MemoryMiB: cmpOr(o.MemoryMiB, cfg.MemoryMiB, 1024), Cores: cmpOr(o.Cores, cfg.Cores, 1)}
	if m.Firmware != "seabios" && m.Firmware != "ovmf" {
		return m, fmt.Errorf("firmware %q: want seabios or ovmf", m.Firmware)
	}
	if m.Type != "pc" && m.Type != "q35" {
		return m, fmt.Errorf("machine %q: want pc or q35", m.Type)
	}
	if o.Bus != "" && !slices.Contains(Buses, o.Bus) {
		return m, fmt.Errorf("bus %q: want one of %s", o.Bus, strings.Join(Buses, ", "))
	}
	if m.MemoryMiB < 16 || m.Cores < 1 || m.Cores > 1024 {
		return m, fmt.Errorf("memory %d MiB, %d cores: want at least 16 MiB and 1..1024 cores", m.MemoryMiB, m.Cores)
	}
	if len(sources) == 0 {
		return m, fmt.Errorf("no disk to boot")
	}
	seen := map[string]bool{}
	for _, d := range cfg.Disks {
		if src, ok := sources[d.Name]; ok && !seen[d.Name] {
			seen[d.Name] = true
			m.Disks = append(m.Disks, Disk{Name: d.Name, Bus: d.Bus, Index: d.Index, Source: src, BootIndex: -1})
		}
	}
	rest := make([]string, 0, len(sources))
	for name := range sources {
		if !seen[name] {
			rest = append(rest, name)
		}
	}
	slices.Sort(rest)
	for _, name := range rest {
		d := Disk{Name: name, Bus: "virtio", Source: sources[name], BootIndex: -1}
		if k := diskKey.FindStringSubmatch(name); k != nil {
			d.Bus, d.Index = k[1], atoi(k[2])
		}
		m.Disks = append(m.Disks, d)
	}
	next := 0
	for _, name := range cfg.BootOrder {
		if i := slices.IndexFunc(m.Disks, func(d Disk) bool { return d.Name == name }); i >= 0 && m.Disks[i].BootIndex < 0 {
			m.Disks[i].BootIndex = next
			next++
		}
	}
	if next == 0 {
		for i := range m.Disks {
			m.Disks[i].BootIndex = i
		}
	}
	if o.Bus != "" {
		// Renumbered on the one bus, in the order above.
		for i := range m.Disks {
			m.Disks[i].Bus, m.Disks[i].Index = o.Bus, i
		}
	}
	// Units on one bus must differ and fit the controller.
	used := map[string]bool{}
	for _, d := range m.Disks {
		key := d.Bus + strconv.Itoa(d.Index)
		if used[key] || d.Index > maxUnit(d.Bus, m.Type) {
			return m, fmt.Errorf("disk %s: no free unit %d on the %s bus", d.Name, d.Index, d.Bus)
		}
		used[key] = true
	}
	return m, nil
}

func atoi(s string) int { n, _ := strconv.Atoi(s); return n }

func cmpOr[T comparable](v ...T) T {
	var zero T
	for _, x := range v {
		if x != zero {
			return x
		}
	}
	return zero
}

// scsiModel maps Proxmox VE's scsihw to a QEMU device model.
func scsiModel(hw string) string {
	switch hw {
	case "lsi", "lsi53c810":
		return "lsi53c895a"
	case "megasas":
		return "megasas"
	case "pvscsi":
		return "pvscsi"
	}
	return "virtio-scsi-pci"
}

// maxUnit is the highest disk index a bus takes.
func maxUnit(bus, machine string) int {
	switch bus {
	case "ide":
		if machine == "q35" {
			return 5 // the ICH9 AHCI's six ports
		}
		return 3 // two IDE buses, master and slave
	case "sata":
		return 5
	case "scsi":
		return 30
	}
	return 99
}
