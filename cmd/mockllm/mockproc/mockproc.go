// Package mockproc starts the mock server as a child process for the
// benchmark commands (cmd/fidelity, cmd/hostile): optionally pinned to one
// CPU with taskset, its address read from the banner it prints first.
package mockproc

import (
	"bufio"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
)

// Start runs `bin --port 0 args...` (under `taskset -c cpu` when cpu ≥ 0),
// sends its stderr to stderr, and returns the process and the host:port
// from its first stdout line ("... http://HOST:PORT" or https://). On error the process
// is killed.
func Start(bin string, cpu int, stderr io.Writer, args ...string) (*exec.Cmd, string, error) {
	argv := append([]string{bin, "--port", "0"}, args...)
	if cpu >= 0 {
		argv = append([]string{"taskset", "-c", strconv.Itoa(cpu)}, argv...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, "", err
	}
	if err := cmd.Start(); err != nil {
		return nil, "", fmt.Errorf("start %s: %w", bin, err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		return nil, "", fmt.Errorf("mockllm did not report its address: %w", err)
	}
	_, addr, ok := strings.Cut(strings.TrimSpace(line), "://")
	if !ok {
		cmd.Process.Kill()
		return nil, "", fmt.Errorf("unexpected mockllm banner %q", line)
	}
	return cmd, addr, nil
}
