package main

// The steps a job may name (schedule.jobs[].run) register themselves when
// their package is in the build; these are the ones no command calls by
// name.
import _ "github.com/tally-dev/tally/deliver"
