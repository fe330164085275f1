// Command pbsdirect restores, verifies and writes Proxmox Backup Server
// archives directly from a datastore directory or a bucket, with no PBS
// server in the loop.
//
// Exit codes (see exitCode): 0 success; 1 the data is damaged or missing
// (proven: read and failed a check, or definitively not there); 2 usage
// error; 3 the run could not complete for a reason outside the data, or
// any error that proves nothing about the data (retrying later can help);
// 130/143 interrupted by SIGINT/SIGTERM.
//
// Where things go: this package declares the commands (their flags, help
// texts, what runs them and what they print) and maps the engine's errors
// to exit codes (exitCode); the generic machinery under them (command tree,
// help, output formats and JSON results, man pages, completion plumbing,
// terminal prompts) is cmd/internal/cli's, and the work is the engine's
// (restore.Restore, verify, archive, backup, opened through snapshot). A new command is a file here that registers in commands.go,
// calls those packages and holds no engine logic; its tests here are about
// flags, output and exit codes, and end-to-end runs with real servers and
// devices (skipped under go test -short); the engine's behaviour is tested
// in the engine's packages.
package main
