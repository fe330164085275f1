// Package cli is the command layer's generic machinery: the command tree
// built from Specs (help wrapped to the terminal, nearest-command and
// nearest-flag suggestions, usage errors for parse mistakes), one run of a
// command line with its exit code (Program.Run), the output formats and the
// one JSON result of each command (Output), man pages, the shell completion
// protocol's plumbing, build version information and terminal prompts.
//
// It knows nothing of PBS: no engine logic, and it imports no engine
// (restore, verify, archive, backup, snapshot) nor the stores. What a
// program's errors mean (its exit-code classification), its commands and
// their flags are the program's: cmd/pbsdirect gives them in a Program.
//
// Exit codes: ExitOK 0; ExitData 1 (the data is damaged or missing);
// ExitUsage 2 (UsageError); ExitOutside 3 (a cause outside the data);
// 128 + signal number when an InterruptedError stopped the run.
package cli
