// Package job is the contract between the runner and the capabilities it
// runs: the environment a step gets (Env), a step and its result (Step,
// Result), the registry that names steps for schedule.jobs[].run
// (Register) and the one of what every run that writes does first
// (RegisterStart), the one partial-failure type a run's failures gather in
// (Partial), what a refusal is (ErrRefused), how recent the usage is
// (Freshness, which the runner's health shows), the one injected clock
// (Clock) and the exit code every command derives from its error
// (ExitCode). It holds no capability's types: a capability (ingest,
// reports, closes, deliver, alerts, export) imports job and registers its
// step; the runner (schedules) imports job and runs steps by name.
package job
