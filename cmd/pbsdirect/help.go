package main

import "strings"

// commandHelp is what a command's --help says besides its flags: a
// description (what it does, the forms its arguments take, the environment
// it reads) and examples. name is the command as newFlags gets it
// ("restore", "key create"); an unknown name has neither.
func commandHelp(name string) (about, examples string) {
	switch name {
	case "key":
		return `Create, show and manage key files as proxmox-backup-client key does. PATH
defaults to ` + defaultKeyPath() + `, the default key file that restore,
verify and backup read when a snapshot is encrypted and no --keyfile is
given. A paper key (the text of 'key paperkey') is accepted wherever a key
file is.`,
			`  pbsdirect key create /root/enc.key
  pbsdirect key show --verify /root/enc.key`
	case "report":
		return `Work with the JSON reports that verify writes (--report): merge the reports
of verify shards into one.`,
			`  pbsdirect report merge shard-*.json`
	case "restore":
		return `Restore one archive of a snapshot: a disk image (.img.fidx) to a file, a block
device or - (standard output), or a blob (.blob: a VM config, the client log).
Every chunk is checked (CRC, digest; AES-GCM with --keyfile) before its bytes
are written; the target is synced before success is reported.

SNAPSHOT is TYPE/ID/TIME (vm/100/2026-11-29T10:00:00Z) or TYPE/ID for the
group's latest; ARCHIVE is drive-scsi0, drive-scsi0.img or drive-scsi0.img.fidx.
TARGET is a new file (an existing one needs --force), a block device, or -.

Environment: PBSDIRECT_STORE (--store), PBS_NAMESPACE (--ns),
PBS_ENCRYPTION_PASSWORD, PBS_ENCRYPTION_PASSWORD_FILE, PBS_ENCRYPTION_PASSWORD_FD
(key passphrase), PROXMOX_OUTPUT_FORMAT (--output-format), AWS_* for s3://.`,
			`  pbsdirect restore --store /mnt/datastore/store1 vm/100 drive-scsi0 /var/tmp/vm100.raw
  pbsdirect restore --store s3://backups/pbs --keyfile enc.key vm/100/2026-11-29T10:00:00Z drive-scsi0 /dev/vg0/vm-100-disk-0
  pbsdirect restore --store /mnt/ds vm/100 qemu-server.conf -`
	case "drill":
		return `Disaster-recovery rehearsal: restore an archive to TARGET, read the target back
and compare it with the snapshot, then report the time to restore and the
result (text, or one JSON object for monitoring). --remove deletes the
restored file after a successful drill.

SNAPSHOT, ARCHIVE and TARGET are as for restore.`,
			`  pbsdirect drill --store /mnt/ds vm/100 drive-scsi0 /var/tmp/drill.raw --remove
  pbsdirect drill --store s3://backups/pbs --output-format json vm/100 drive-scsi0 /var/tmp/drill.raw`
	case "verify":
		return `Verify one snapshot, every snapshot of a group (TYPE/ID; --latest: the newest),
or every snapshot of the namespace (--max-depth N: and its children;
--all-namespaces: the whole store): every chunk is read and checked (CRC,
digest; AES-GCM with --keyfile) and the indexes against the manifest. PBS's
"verified" state in the store is not updated. Exits 1 when anything is damaged
or missing.

` + strings.TrimSuffix(verifyHelp, "\n"),
			`  pbsdirect verify --store /mnt/ds vm/100/2026-11-29T10:00:00Z
  pbsdirect verify --store s3://backups/pbs --keyfile enc.key --output-format json`
	case "snapshots":
		return `List the finished snapshots of a namespace (--max-depth: and those below), with
their archives, size, encryption, protection, notes and last verify state as
PBS recorded them.`,
			`  pbsdirect snapshots --store /mnt/ds
  pbsdirect snapshots --store /mnt/ds --ns prod --max-depth -1 --output-format json-pretty`
	case "groups":
		return `List the backup groups (TYPE/ID) of a namespace with their snapshot count,
owner and the first line of their notes.`,
			`  pbsdirect groups --store /mnt/ds --ns prod`
	case "namespaces":
		return `List the namespaces of a datastore, or those below --ns.`,
			`  pbsdirect namespaces --store s3://backups/pbs --max-depth 1`
	case "backup":
		return `Back up disk images (NAME.img:PATH, from a file or block device) and blobs
(NAME.conf:PATH, NAME.log:PATH) into a new snapshot of a datastore, as
proxmox-backup-client does. Chunks already in the store are not written again.
With --keyfile (or the default key file) archives are encrypted;
--master-pubkey-file also stores the key encrypted under an RSA master key.`,
			`  pbsdirect backup --store /mnt/ds --backup-type vm --backup-id 100 drive-scsi0.img:/dev/vg0/vm-100-disk-0
  pbsdirect backup --store s3://backups/pbs --keyfile enc.key --master-pubkey-file master-public.pem root.img:/var/tmp/root.raw`
	case "mount":
		return `Mount a snapshot's archives as read-only files (FUSE) at MOUNTPOINT: chunks are
read, checked and cached as the files are read; nothing is restored first.
Stops on unmount, SIGINT or SIGTERM (exit 0).`,
			`  pbsdirect mount --store /mnt/ds vm/100 /mnt/vm100 &
  qemu-img convert -O qcow2 /mnt/vm100/drive-scsi0.img /var/tmp/vm100.qcow2; fusermount -u /mnt/vm100`
	case "serve-nbd":
		return `Serve a snapshot's disk images read-only over NBD (one export per image, named
as the archive without .img.fidx) on a Unix socket or, with --listen, TCP. Stops on SIGINT or
SIGTERM (exit 0).`,
			`  pbsdirect serve-nbd --store /mnt/ds vm/100 &
  qemu-img info "nbd+unix:///drive-scsi0?socket=$XDG_RUNTIME_DIR/pbsdirect-nbd.sock"`
	case "report merge":
		return `Merge the JSON reports of verify shards (verify --shard I/N --report FILE) into
one report, ok only when every shard's is.`,
			`  pbsdirect report merge --output-format json-pretty shard-*.json
  pbsdirect report merge --report s3://reports/all.json s3://reports/shard-1.json s3://reports/shard-2.json`
	case "version":
		return `Print the version, VCS revision and Go version of this build.`,
			`  pbsdirect version --output-format json`
	case "key create":
		return `Create a key file (AES-256 key, as proxmox-backup-client key create) at PATH,
default the default key file. The passphrase is asked twice on a terminal, or
taken from PBS_ENCRYPTION_PASSWORD / _FILE / _FD; --kdf none stores it
unprotected. An existing file is never overwritten.`,
			`  pbsdirect key create /root/enc.key
  PBS_ENCRYPTION_PASSWORD_FILE=/root/pass pbsdirect key create --kdf pbkdf2 enc.key`
	case "key show":
		return `Show a key file's fingerprint, KDF and dates (--verify: decrypt it and check
the stored fingerprint).`,
			`  pbsdirect key show --verify /root/enc.key`
	case "key change-passphrase":
		return `Re-encrypt a key file under a new passphrase (or none with --kdf none); the
key itself, and so its fingerprint, does not change.`,
			`  pbsdirect key change-passphrase /root/enc.key`
	case "key paperkey":
		return `Print a key file as a paper key (text) to keep offline. The text is accepted
wherever a key file is (--keyfile), by pbsdirect and by PBS.`,
			`  pbsdirect key paperkey --subject "$(hostname)" /root/enc.key > enc.paperkey.txt`
	case "key create-master-key":
		return `Create an RSA master key pair in the current directory: master-public.pem (give
it to backup --master-pubkey-file) and master-private.pem (passphrase-protected;
keep it offline: it recovers every key stored under the public key). Existing
files are never overwritten.`,
			`  pbsdirect key create-master-key   # in the current directory, e.g. a USB stick`
	case "key import-with-master-key":
		return `Recover a key file with the RSA master private key. ENCRYPTED-KEY is either a
snapshot (TYPE/ID/TIME) of --store, whose rsa-encrypted.key.blob is read, or
the path of an rsa-encrypted.key.blob file; MASTER-KEY is master-private.pem.
The recovered key is written to PATH (default: the default key file) under a
new passphrase.`,
			`  pbsdirect key import-with-master-key --store /mnt/ds vm/100/2026-11-29T10:00:00Z master-private.pem /root/enc.key
  pbsdirect key import-with-master-key rsa-encrypted.key.blob master-private.pem recovered.key`
	}
	return "", ""
}
