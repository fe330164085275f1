package verify

// BackupAdvice returns, for a run that found damaged or missing chunks,
// what a later backup of the same groups must be told: a backup counts on
// the chunks of its group's previous snapshot without reading them back
// when their files were not rewritten since, so bit rot that kept a
// chunk's size and time would be carried into the new snapshot. Empty when
// no chunk was found damaged or missing.
func (rep *Report) BackupAdvice() string {
	if rep.DamagedChunks == 0 {
		return ""
	}
	return "a backup counting on a damaged snapshot would reuse its damaged chunks: run the next backup of its group with --no-previous (it reads back and replaces them), or mend the store first (pbsdirect repair)"
}
