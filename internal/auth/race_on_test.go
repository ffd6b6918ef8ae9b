//go:build race

package auth_test

// raceDetector: allocation counts are not the program's under -race.
const raceDetector = true
