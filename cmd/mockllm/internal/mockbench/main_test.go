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
	for start := time.Now(); ; {
		now, err := processCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if now >= before+10*time.Millisecond {
			break
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("CPU time stayed at %v after 5s of spinning", now)
		}
	}
	if _, err := processCPU(-1); err == nil {
		t.Error("no error for a process that does not exist")
	}
}
