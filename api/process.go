package api

import "time"

// Routes of the process capability.
const (
	PathExec          = "/v1/exec"
	PathProcesses     = "/v1/processes"
	PathProcess       = "/v1/processes/{id}"
	PathProcessStream = "/v1/processes/{id}/stream"
	PathProcessStdin  = "/v1/processes/{id}/stdin"
	PathProcessSignal = "/v1/processes/{id}/signal"
	PathProcessResize = "/v1/processes/{id}/resize"
)

// Command says what to run. Exactly one of Argv (run directly) and Shell
// (run as /bin/sh -c Shell) is set.
type Command struct {
	Argv  []string          `json:"argv,omitempty"`
	Shell string            `json:"shell,omitempty"`
	Env   map[string]string `json:"env,omitempty"`
	Cwd   string            `json:"cwd,omitempty"`
	// User runs the command as that user (name or uid); needs a root daemon.
	User string `json:"user,omitempty"`
	// TimeoutMS kills the whole process tree after that many milliseconds; 0 = none.
	TimeoutMS int64 `json:"timeout_ms,omitempty"`
}

// ExecRequest is the body of POST /v1/exec: run to completion and answer.
type ExecRequest struct {
	Command
	// Stdin is written to the process and then closed.
	Stdin string `json:"stdin,omitempty"`
	// MaxOutputBytes caps each of stdout and stderr; 0 = the daemon's limit.
	MaxOutputBytes int64 `json:"max_output_bytes,omitempty"`
}

// ExecResult is the answer of POST /v1/exec.
type ExecResult struct {
	Stdout          string `json:"stdout"`
	Stderr          string `json:"stderr"`
	ExitCode        int    `json:"exit_code"`
	Signal          string `json:"signal,omitempty"`
	TimedOut        bool   `json:"timed_out"`
	StdoutTruncated bool   `json:"stdout_truncated"`
	StderrTruncated bool   `json:"stderr_truncated"`
	DurationMS      int64  `json:"duration_ms"`
	// ProcessID is set when background children of the command (`app &`)
	// live on: they are listed, counted and signalled as that process.
	ProcessID string `json:"process_id,omitempty"`
	// Descendants are their pids when the command finished.
	Descendants []int `json:"descendants,omitempty"`
	// Replayed says the answer is that of an earlier call with the same
	// Idempotency-Key: the command ran once, then.
	Replayed bool `json:"replayed,omitempty"`
}

// Truncated reports whether either stream was cut.
func (r *ExecResult) Truncated() bool { return r.StdoutTruncated || r.StderrTruncated }

// PTYSize is a terminal size in character cells.
type PTYSize struct {
	Cols uint16 `json:"cols"`
	Rows uint16 `json:"rows"`
}

// StartRequest is the body of POST /v1/processes: start a detached process.
type StartRequest struct {
	Command
	// Stdin keeps the process's stdin open for POST .../stdin and the stream.
	Stdin bool `json:"stdin,omitempty"`
	// PTY runs the process on a pseudo-terminal of that size (stdout and
	// stderr are then one stream, "stdout").
	PTY *PTYSize `json:"pty,omitempty"`
	// Tag is a free label a client can find its processes by.
	Tag string `json:"tag,omitempty"`
}

// ProcessState is "running" or "exited".
type ProcessState string

const (
	StateRunning ProcessState = "running"
	StateExited  ProcessState = "exited"
)

// ProcessInfo describes one process the daemon started.
type ProcessInfo struct {
	ID        string       `json:"id"`
	PID       int          `json:"pid"`
	Argv      []string     `json:"argv"`
	Tag       string       `json:"tag,omitempty"`
	PTY       bool         `json:"pty"`
	State     ProcessState `json:"state"`
	ExitCode  *int         `json:"exit_code,omitempty"`
	Signal    string       `json:"signal,omitempty"`
	TimedOut  bool         `json:"timed_out"`
	StartedAt time.Time    `json:"started_at"`
	ExitedAt  *time.Time   `json:"exited_at,omitempty"`
	// Exec marks the record of a one-shot exec whose background children
	// outlived it (it has no output of its own: the exec answered it).
	Exec bool `json:"exec,omitempty"`
	// Descendants are the live pids of the process's tree other than the
	// leader: what it started, kept in its cgroup even after the leader
	// exited; a signal to the process reaches them. Empty without
	// containment (process_containment "off").
	Descendants []int `json:"descendants,omitempty"`
	// StdoutBytes and StderrBytes are the total bytes each stream produced:
	// the offset the next byte will have.
	StdoutBytes int64 `json:"stdout_bytes"`
	StderrBytes int64 `json:"stderr_bytes"`
}

// Stream names one output stream of a process.
type Stream string

const (
	StreamStdout Stream = "stdout"
	StreamStderr Stream = "stderr"
)

// StreamEvent is one WebSocket message from GET /v1/processes/{id}/stream.
//
// The client opens the stream with ?stdout_offset=N&stderr_offset=M and
// receives every byte from those offsets on, then an "exit" event. When the
// ring no longer holds an offset, a "gap" event says where the data resumes
// (Offset) and how many bytes were lost (Lost), so loss is never silent.
type StreamEvent struct {
	Type   string `json:"type"` // "output", "gap", "exit", "error"
	Stream Stream `json:"stream,omitempty"`
	Offset int64  `json:"offset"`
	Data   []byte `json:"data,omitempty"`
	Lost   int64  `json:"lost,omitempty"`
	// Exit is set on "exit".
	Exit *ProcessInfo `json:"exit,omitempty"`
	// Error is set on "error": a StreamInput the daemon could not apply
	// (bad message, stdin of an exited process, ...). The stream goes on.
	Error *Error `json:"error,omitempty"`
}

// StreamInput is one WebSocket message a client may send on the stream.
type StreamInput struct {
	Type   string   `json:"type"` // "stdin", "close_stdin", "resize", "signal"
	Data   []byte   `json:"data,omitempty"`
	Size   *PTYSize `json:"size,omitempty"`
	Signal string   `json:"signal,omitempty"`
}

// SignalRequest is the body of POST /v1/processes/{id}/signal.
type SignalRequest struct {
	// Signal is a name (TERM, KILL, INT, HUP, QUIT, USR1, USR2, STOP, CONT)
	// with or without the SIG prefix.
	Signal string `json:"signal"`
	// Group sends it to every process of the tree (default true): the
	// process's cgroup, or without containment its process group. False
	// sends it to the leader only.
	Group *bool `json:"group,omitempty"`
}

// StdinResult is the answer of POST /v1/processes/{id}/stdin.
type StdinResult struct {
	// Bytes is how many bytes of the body reached the process's stdin.
	Bytes int64 `json:"bytes"`
}
