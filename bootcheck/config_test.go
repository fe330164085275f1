package bootcheck

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseConfig(t *testing.T) {
	for _, tc := range []struct {
		name, conf string
		want       Config
		err        string
	}{
		{"typical", "boot: order=scsi0;ide2;net0\ncores: 2\nsockets: 2\nmemory: 4096\nbios: ovmf\nmachine: pc-q35-8.1\nscsihw: virtio-scsi-single\nscsi0: local-lvm:vm-100-disk-0,iothread=1,size=32G\nide2: local:iso/d.iso,media=cdrom,size=600M\nefidisk0: local-lvm:vm-100-disk-1,size=4M\nvirtio1: local-lvm:vm-100-disk-2,size=8G\n",
			Config{Firmware: "ovmf", Machine: "q35", SCSIHW: "virtio-scsi-single", MemoryMiB: 4096, Cores: 4,
				Disks: []ConfigDisk{{"scsi0", "scsi", 0}, {"virtio1", "virtio", 1}}, BootOrder: []string{"scsi0", "ide2"}}, ""},
		{"legacy boot, bootdisk, memory current, snapshot section ignored", "#a comment: with colon\nboot: cdn\nbootdisk: sata1\nmemory: current=2048\nsata1: x,size=1G\n[snap1]\nmemory: 64\nscsi9: y\n",
			Config{MemoryMiB: 2048, Disks: []ConfigDisk{{"sata1", "sata", 1}}, BootOrder: []string{"sata1"}}, ""},
		{"machine type property", "machine: type=pc-i440fx-9.0,viommu=intel\n", Config{Machine: "pc"}, ""},
		{"bad bios", "bios: coreboot\n", Config{}, "line 1: bios"},
		{"bad memory", "cores: 1\nmemory: lots\n", Config{Cores: 1}, "line 2: memory"},
		{"bad machine", "machine: virt\n", Config{}, "machine"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.conf))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestNewMachine(t *testing.T) {
	cfg := Config{Firmware: "ovmf", MemoryMiB: 2048, Cores: 2, SCSIHW: "lsi",
		Disks:     []ConfigDisk{{"scsi0", "scsi", 0}, {"scsi1", "scsi", 1}, {"ide0", "ide", 0}},
		BootOrder: []string{"scsi1", "scsi0"}}
	for _, tc := range []struct {
		name    string
		cfg     Config
		sources map[string]string
		o       Overrides
		want    Machine
		err     string
	}{
		{"config", cfg, map[string]string{"scsi0": "a", "scsi1": "b", "virtio3": "c"}, Overrides{},
			Machine{Firmware: "ovmf", Type: "pc", SCSIHW: "lsi53c895a", MemoryMiB: 2048, Cores: 2, Disks: []Disk{
				{"scsi0", "scsi", 0, "a", 1}, {"scsi1", "scsi", 1, "b", 0}, {"virtio3", "virtio", 3, "c", -1}}}, ""},
		{"no config, overrides", Config{}, map[string]string{"scsi0": "a", "weird": "b"}, Overrides{Firmware: "seabios", Bus: "sata", MemoryMiB: 512, Cores: 3, Type: "q35"},
			Machine{Firmware: "seabios", Type: "q35", SCSIHW: "virtio-scsi-pci", MemoryMiB: 512, Cores: 3, Disks: []Disk{
				{"scsi0", "sata", 0, "a", 0}, {"weird", "sata", 1, "b", 1}}}, ""},
		{"defaults", Config{}, map[string]string{"drive": "a"}, Overrides{},
			Machine{Firmware: "seabios", Type: "pc", SCSIHW: "virtio-scsi-pci", MemoryMiB: 1024, Cores: 1, Disks: []Disk{{"drive", "virtio", 0, "a", 0}}}, ""},
		{"no disk", cfg, nil, Overrides{}, Machine{}, "no disk"},
		{"ide unit out of range", Config{}, map[string]string{"ide4": "a"}, Overrides{}, Machine{}, "no free unit"},
		{"bad firmware", Config{}, map[string]string{"scsi0": "a"}, Overrides{Firmware: "uboot"}, Machine{}, "firmware"},
		{"bad bus", Config{}, map[string]string{"scsi0": "a"}, Overrides{Bus: "nvme"}, Machine{}, "bus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := NewMachine(tc.cfg, tc.sources, tc.o)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

func TestDiskName(t *testing.T) {
	for in, want := range map[string]string{"drive-scsi0.img.fidx": "scsi0", "drive-efidisk0.img": "efidisk0", "data.img.fidx": "data", "drive-virtio1": "virtio1"} {
		if got := DiskName(in); got != want {
			t.Errorf("DiskName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestQEMUArgs: each bus gets its controller once, its unit and the boot
// index; paths with commas are escaped.
func TestQEMUArgs(t *testing.T) {
	m := Machine{Firmware: "seabios", Type: "pc", SCSIHW: "virtio-scsi-pci", MemoryMiB: 256, Cores: 2, Disks: []Disk{
		{"scsi0", "scsi", 0, "a", 0}, {"scsi2", "scsi", 2, "b", -1}, {"sata1", "sata", 1, "c", -1}, {"ide3", "ide", 3, "d", 1}, {"virtio0", "virtio", 0, "e", -1}}}
	a := strings.Join(qemuArgs(m, "/t,d", "/o/c.log", "/t,d/fw.log", "/t,d/q.sock", "/t,d/a.sock", true, false), " ")
	for _, want := range []string{"-nic none", "-no-reboot -no-shutdown", "-m 256 -smp 2", "path=/o/c.log", "path=/t,,d/q.sock",
		"virtio-scsi-pci,id=scsihw0", "scsi-hd,bus=scsihw0.0,scsi-id=0,drive=drive0,bootindex=0", "scsi-hd,bus=scsihw0.0,scsi-id=2,drive=drive1 ",
		"ahci,id=ahci0", "ide-hd,bus=ahci0.1,drive=drive2 ", "ide-hd,bus=ide.1,unit=1,drive=drive3,bootindex=1", "virtio-blk-pci,drive=drive4",
		"file=/t,,d/disk0-scsi0.qcow2", "name=org.qemu.guest_agent.0", "-accel tcg"} {
		if !strings.Contains(a+" ", want) {
			t.Errorf("args lack %q:\n%s", want, a)
		}
	}
	if strings.Count(a, "virtio-scsi-pci") != 1 || strings.Contains(a, "-accel kvm") {
		t.Errorf("args: %s", a)
	}
}

func FuzzParseConfig(f *testing.F) {
	f.Add([]byte("boot: order=scsi0\nmemory: 512\ncores: 2\nscsi0: x,size=1G\n[s]\nmemory: 1\n"))
	f.Add([]byte("machine: type=q35\nbios: ovmf\nide2: none,media=cdrom\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := ParseConfig(data)
		if err != nil {
			return
		}
		for _, d := range c.Disks {
			if d.Index < 0 || d.Index > 99 {
				t.Fatalf("disk %+v", d)
			}
		}
		if c.MemoryMiB < 0 || c.Cores < 0 {
			t.Fatalf("config %+v", c)
		}
	})
}
