package main

import (
	"os"
	"testing"
	"time"
)

// TestProcessCPU spins until this process's CPU time, read from
// /proc/self's stat line, moves on by at least one clock tick.
func TestProcessCPU(t *testing.T) {
	before, err := processCPU(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Spinning costs CPU time however busy the machine is; a reading that
	// never moves keeps the loop going until go test's -timeout.
	for {
		now, err := processCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now >= before+10*time.Millisecond {
			break
		}
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
