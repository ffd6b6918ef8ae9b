//go:build !race

package chunk_test

const raceEnabled = false
