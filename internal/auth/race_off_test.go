//go:build !race

package auth_test

const raceDetector = false
